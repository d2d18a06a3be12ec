# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the run store keeps of one host, prepared in the Ansible worker as the host's result arrives (the
gpu_facts action, beside the facts file), so that the run's one store transaction only inserts: the facts
file's bytes compressed, and each GPU's cumulative error counters.

The result carries it as gpufleet_store_extract: {"facts_zlib": base64 text, "counters": {gpu key: {counter:
value}}}. The controller uses an extract only for a host whose facts file the worker wrote, and only when it
has that shape; anything else is computed again from the facts. Standard library only: the action imports
this on every controller, with or without SQLAlchemy.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import binascii
import zlib

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import COUNTER_COLUMNS, host_counters

STORE_EXTRACT_KEY = "gpufleet_store_extract"

# zlib level of the stored facts. Measured on 1,000 facts files of 8 GPUs (24.4 KB each; bench/README.md,
# section 8): level 1 0.067 s and 2,850 bytes a host, level 6 (zlib's default) 0.151 s and 2,499 bytes,
# level 0 (stored) 0.011 s but 24,442 bytes; a Z_FILTERED or Z_RLE strategy, a larger memLevel or a preset
# dictionary (another host's facts) gains nothing at level 1 or costs more time.
FACTS_COMPRESSION = 1


def compressed_facts(data):
    """The stored form of a host's facts: its facts file's bytes (UTF-8 JSON), zlib-compressed."""
    return zlib.compress(data, FACTS_COMPRESSION)


def counters_extract(facts):
    """An extract with the GPUs' counters only: the store then takes the facts from the host's facts file."""
    return {"counters": {key: counters for key, (_gpu, counters) in host_counters(facts).items()}}


def host_extract(facts_text, facts):
    """The extract of one host: facts_text, the text of its facts file (report_writer.facts_file_text)."""
    blob = compressed_facts(facts_text.encode("utf-8", "backslashreplace"))
    extract = {"facts_zlib": base64.b64encode(blob).decode("ascii")}
    extract.update(counters_extract(facts))
    return extract


def extract_blob(extract):
    """The compressed facts of an extract, or None when it has none that decodes."""
    text = extract.get("facts_zlib") if isinstance(extract, dict) else None
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None


COUNTER_NAMES = frozenset(COUNTER_COLUMNS)
COUNT_TYPES = frozenset((int, type(None)))  # a boolean is not a count


def extract_counters(extract):
    """{gpu key: (None, counters)} as store.counters.host_counters gives them (the GPU object left for the reader
    to find by its key), or None when the extract has no counters of that shape."""
    counters = extract.get("counters") if isinstance(extract, dict) else None
    if not isinstance(counters, dict):
        return None
    found = {}
    for key, values in counters.items():
        if not isinstance(key, str) or not isinstance(values, dict) or values.keys() != COUNTER_NAMES:
            return None
        if not {type(value) for value in values.values()} <= COUNT_TYPES:
            return None
        found[key] = (None, values)
    return found


def fleet_counters(facts_by_host, extracts=None):
    """{host: host_counters(facts)} for the hosts whose facts were read; a host's counters come from its worker's
    extract (extract_counters) where extracts has one of the right shape, the GPU objects then left None."""
    extracts = extracts or {}
    found = {}
    for host, facts in facts_by_host.items():
        if facts is None:
            continue
        counters = extract_counters(extracts[host]) if host in extracts else None
        found[host] = counters if counters is not None else host_counters(facts)
    return found
