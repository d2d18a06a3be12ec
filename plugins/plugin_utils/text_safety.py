# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one sanitizer for text that hosts control, before it reaches a terminal, a text file or a report.

Process names, kernel log lines, unit names, GPU names, error messages, host names and Ansible's msg
strings can hold anything: ANSI escape sequences that recolour or rewrite a terminal, a carriage return
that overwrites the line it is on, NUL, bidi overrides (U+202E) that display text in another order
than it is written, lone surrogates that cannot be encoded. Nothing is dropped: every such character
becomes a visible escape (\\x1b, \\r, \\u202e, \\udcff), so the text still says what the host sent.

Unsafe: every control (Unicode category Cc: C0, DEL, C1), format character (Cf: bidi embeddings,
overrides and isolates, zero-width characters, the BOM), surrogate (Cs) and the line and paragraph
separators (Zl, Zp). tests/unit/plugins/plugin_utils/test_text_safety.py checks the table below against unicodedata.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

_UNSAFE_RANGES = (
    "\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
UNSAFE = re.compile("[%s]" % _UNSAFE_RANGES)
# The same without tab and newline, for text that may span lines; and without carriage return too, for
# JSON text, whose strings hold no raw control (json.dumps escapes them) and whose layout may hold these.
_UNSAFE_IN_TEXT = re.compile("[%s]" % _UNSAFE_RANGES.replace("\x00-\x1f", "\x00-\x08\x0b-\x1f"))
_UNSAFE_IN_XML = re.compile("[%s]" % _UNSAFE_RANGES.replace("\x00-\x1f", "\x00-\x08\x0b\x0c\x0e-\x1f"))
# Characters XML 1.0 cannot carry at all, besides the controls above.
_NOT_XML = re.compile("[\ufffe\uffff]")

_SHORT_ESCAPES = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}


def escape_character(character):
    """The visible escape of one character: \\r, \\x1b, \\u202e or \\U000e0001."""
    if character in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[character]
    code = ord(character)
    if code < 0x100:
        return "\\x%02x" % code
    if code < 0x10000:
        return "\\u%04x" % code
    return "\\U%08x" % code


def _escape_match(match):
    return escape_character(match.group())


def _as_text(value):
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return value if isinstance(value, str) else str(value)


def clip(text, limit):
    return text if limit is None or len(text) <= limit else text[:max(limit - 3, 0)] + "..."


def safe_line(value, limit=None):
    """One printable line: unsafe characters escaped; tabs, newlines and CRLF pairs (a message written
    over several lines) collapse with the other whitespace into single spaces. A lone \\r is escaped.
    limit: at most that many characters, the rest cut off with '...'."""
    text = _as_text(value).replace("\r\n", "\n")
    text = _UNSAFE_IN_TEXT.sub(_escape_match, text)
    return clip(" ".join(text.split()), limit)


def safe_text(value, limit=None):
    """Printable text that may span lines: as safe_line, but newlines and tabs stay (CRLF becomes LF)."""
    text = _as_text(value).replace("\r\n", "\n")
    return clip(_UNSAFE_IN_TEXT.sub(_escape_match, text), limit)


def safe_xml_text(value):
    """safe_text that XML 1.0 can carry: also U+FFFE and U+FFFF, which XML forbids, become escapes (never
    dropped, never U+FFFD). Tab and newline stay for the XML writer to encode."""
    return _NOT_XML.sub(_escape_match, safe_text(value))


def is_safe(value):
    """True when safe_text would leave value unchanged."""
    text = _as_text(value)
    return "\r" not in text and not _UNSAFE_IN_TEXT.search(text)


def json_text(text):
    """JSON text with every unsafe character inside its strings written as a \\u escape.

    Decoders read the same data back; a terminal that shows the file (cat, less -r, a CI log) sees no
    raw control, bidi override or surrogate. json.dumps already escapes C0 controls; this adds DEL, C1,
    the format characters and the separators, which are legal raw in JSON strings. Outside strings,
    JSON text holds none of these characters (its tabs, newlines and carriage returns outside strings are
    layout, and json.dumps escapes those inside), so replacing them anywhere is safe.
    """
    return _UNSAFE_IN_XML.sub(_json_escape, text)


def _json_escape(match):
    code = ord(match.group())
    if code < 0x10000:
        return "\\u%04x" % code
    code -= 0x10000
    return "\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


_JSON_TOKENS = re.compile(r'\\\\|\\r\\n|\\[bfr]|\\u00([0-9a-fA-F]{2})|[%s]' % _UNSAFE_RANGES.replace("\x00-\x1f", ""))
_JSON_SHORT = {"\\b": "\x08", "\\f": "\x0c", "\\r": "\r"}


def _visible_json_token(match):
    token = match.group()
    if token == "\\\\":
        return token
    if token == "\\r\\n":
        return "\\n"
    if match.group(1) is not None:
        character = chr(int(match.group(1), 16))
    else:
        character = _JSON_SHORT.get(token, token)
    return "\\" + escape_character(character)


def visible_json_strings(text):
    """JSON text (from json.dumps, ensure_ascii=False) whose strings read as safe_text would write them:
    each control, format character or surrogate becomes its visible escape (the string then holds a
    backslash, 'x1b'), for pages that show the strings to people. Newlines and tabs stay."""
    return _JSON_TOKENS.sub(_visible_json_token, text)
