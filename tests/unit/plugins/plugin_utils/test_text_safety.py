"""The sanitizer for host-controlled text: every unsafe character escaped visibly, none dropped."""

import json
import sys
import unicodedata

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import (
    UNSAFE, escape_character, is_safe, json_text, safe_line, safe_text, safe_xml_text)

UNSAFE_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")
HOSTILE = "py\x1b[2J\x1b]0;owned\x07thon\rroot\x00 \u202egnp.exe \udcff\x9b31m"


def every_character():
    return (chr(code) for code in range(sys.maxunicode + 1))


def test_the_table_covers_every_control_format_surrogate_and_separator_of_this_python():
    missing = [hex(ord(c)) for c in every_character() if unicodedata.category(c) in UNSAFE_CATEGORIES
               and not UNSAFE.match(c)]
    assert missing == []


def test_the_table_leaves_ordinary_text_alone():
    flagged = [hex(ord(c)) for c in every_character() if UNSAFE.match(c)
               and unicodedata.category(c) not in UNSAFE_CATEGORIES and unicodedata.category(c) != "Cn"]
    assert flagged == []


def test_escapes_are_visible_and_name_the_character():
    assert escape_character("\x1b") == "\\x1b"
    assert escape_character("\r") == "\\r"
    assert escape_character("\x00") == "\\x00"
    assert escape_character("\u202e") == "\\u202e"
    assert escape_character("\udcff") == "\\udcff"
    assert escape_character("\U000e0041") == "\\U000e0041"


def test_safe_line_escapes_ansi_cr_nul_bidi_and_surrogates():
    line = safe_line(HOSTILE)
    assert line == ("py\\x1b[2J\\x1b]0;owned\\x07thon\\rroot\\x00 \\u202egnp.exe \\udcff\\x9b31m")
    assert line.isprintable()
    line.encode("utf-8")  # a lone surrogate would make this raise


def test_safe_line_collapses_line_breaks_and_tabs_into_spaces():
    assert safe_line("collection failed:\n  Traceback\r\n\tKeyError") == "collection failed: Traceback KeyError"
    assert safe_line("a\x85b\u2028c") == "a\\x85b\\u2028c"  # whitespace to str.split(), escaped first


def test_safe_line_clips_after_escaping():
    assert safe_line("x" * 50, limit=10) == "xxxxxxx..."
    assert len(safe_line("\x1b" * 100, limit=20)) == 20


def test_safe_text_keeps_lines_and_tabs():
    assert safe_text("one\r\ntwo\n\tthree\r") == "one\ntwo\n\tthree\\r"
    assert safe_text(None) == "" and safe_text(42) == "42"
    assert safe_text(b"bad \xff byte") == "bad \\xff byte"


def test_plain_text_and_other_scripts_are_unchanged():
    for text in ("NVIDIA H100 80GB HBM3", "gpu-a100-01.example.com", "Ünïcødé 日本語 مرحبا emoji \U0001f600", ""):
        assert safe_line(text) == text and safe_text(text) == text and is_safe(text)
    assert not is_safe("a\rb") and not is_safe("\u202e")


def test_safe_xml_text_escapes_what_xml_forbids_and_keeps_tab_and_newline():
    assert safe_xml_text("a\x00b\x1bc\ufffed\uffff\t\n\r\u202e\r\n") == "a\\x00b\\x1bc\\ufffed\\uffff\t\n\\r\\u202e\n"


@pytest.mark.parametrize("indent", [None, 1])
def test_json_text_reads_back_the_same_data_with_no_raw_unsafe_character(indent):
    data = {"name": HOSTILE, "keys \u2028": ["\x7f", "\u200b", "\U000e0041", "\ud800"], "ok": "ü日本"}
    text = json_text(json.dumps(data, ensure_ascii=False, indent=indent))
    assert json.loads(text) == data
    assert not UNSAFE.search(text.replace("\n", "").replace("\t", ""))
    assert "ü日本" in text
