# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record and replay NVML at pynvml's C-library layer.

pynvml resolves every C function with getattr(pynvml.nvmlLib, name). Putting one of
these objects in pynvml.nvmlLib (use_library) makes the unmodified pynvml code run
against it:

- RecordingLibrary wraps the real libnvidia-ml (a ctypes CDLL) and keeps every call:
  {"fn": name, "args": [state of each argument before the call], "ret": return code,
   "out": {"<argument position>": state after the call of each by-reference argument}}.
  A function the library does not export is kept once as {"fn": name, "missing": true}.
- ReplayLibrary answers from those records: it writes the recorded "out" state into the
  caller's ctypes objects and returns the recorded code.

Values are serialised generically: simple C types as their value, char arrays as text,
other arrays as lists, structures as dicts by field, unions as hex bytes, pointers
(device, GPU-instance and compute-instance handles) as tokens "handle:N" numbered in
order of first appearance, never as addresses.

Misses are loud. A call whose function and argument state were never recorded raises
FixtureMiss when it is made, naming the function and arguments; this includes
functions absent from the fixture altogether (getattr hands back a function that
raises FixtureMiss when called, because pynvml would turn an AttributeError into
NVML_ERROR_FUNCTION_NOT_FOUND and hide the miss). Only a function recorded as
missing raises AttributeError, which replays the old driver that lacked it.

pynvml asks the library for the text of an error code it does not know
(nvmlErrorString) and caches the answer per process, so whether it asks depends on
what ran before. The recorder therefore records nvmlErrorString for every error code
it sees, and replay can always answer it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import ctypes
import json
import re
import sys
import threading

HANDLE_PREFIX = "handle:"
_FAKE_ADDRESS_BASE = 0x7A000000
_FAKE_ADDRESS_STEP = 0x100
_ERROR_STRING_FN = "nvmlErrorString"
_UUID_RE = re.compile(r"(?P<prefix>GPU|MIG)-(?P<hex>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                      r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12})")
_SERIAL_FUNCTIONS = ("nvmlDeviceGetSerial",)
# Shorter values ("0", "N/A") are not serials worth hiding and would replace ordinary text.
_MIN_SERIAL_LENGTH = 6
_TEXT_ENCODING = "utf-8"
_TEXT_ERRORS = "surrogateescape"


class FixtureMiss(Exception):
    """A replayed NVML call that the fixture does not hold: a test or replay failure, never a host condition."""


# ---------------------------------------------------------------- ctypes type tests

def _is_pointer_type(ctype):
    return issubclass(ctype, (ctypes._Pointer, ctypes.c_void_p))


def _is_char_array_type(ctype):
    return issubclass(ctype, ctypes.Array) and ctype._type_ is ctypes.c_char


_CARG_TYPE = type(ctypes.byref(ctypes.c_int()))


def _is_by_reference(arg):
    """Arguments the callee can write into."""
    return isinstance(arg, (_CARG_TYPE, ctypes.Array, ctypes.Structure, ctypes.Union))


def _struct_fields(ctype):
    """(name, type, bits) of a Structure/Union including fields declared on its bases."""
    fields = []
    for klass in reversed(ctype.__mro__):
        for field in klass.__dict__.get("_fields_", ()):
            fields.append((field[0], field[1], field[2] if len(field) > 2 else None))
    return fields


def _decode(raw):
    return raw.decode(_TEXT_ENCODING, _TEXT_ERRORS)


def _encode(text):
    return text.encode(_TEXT_ENCODING, _TEXT_ERRORS)


# ---------------------------------------------------------------- serialisation

class _Serialiser:
    """Turns ctypes values into JSON-able data; pointers become tokens through `token_for`."""

    def __init__(self, token_for):
        self._token_for = token_for

    def value(self, obj):
        if obj is None or isinstance(obj, (bool, int, float)):
            return obj
        if isinstance(obj, bytes):
            return _decode(obj)
        if isinstance(obj, str):
            return obj
        if isinstance(obj, _CARG_TYPE):
            return self.value(obj._obj)
        return self.ctypes_object(obj)

    def ctypes_object(self, obj):
        ctype = type(obj)
        if _is_pointer_type(ctype):
            return self._token_for(ctypes.cast(obj, ctypes.c_void_p).value)
        if issubclass(ctype, ctypes.Array):
            if _is_char_array_type(ctype):
                return _decode(obj.value)
            return [self.value(item) for item in obj]
        if issubclass(ctype, ctypes.Union):
            return ctypes.string_at(ctypes.addressof(obj), ctypes.sizeof(obj)).hex()
        if issubclass(ctype, ctypes.Structure):
            return dict((name, self.field(obj, name, ftype)) for name, ftype, _bits in _struct_fields(ctype))
        if isinstance(obj, ctypes._SimpleCData):
            raw = obj.value
            return _decode(raw) if isinstance(raw, bytes) else raw
        raise TypeError("cannot serialise %r for an NVML fixture" % (obj,))

    def field(self, struct, name, ftype):
        if issubclass(ftype, (ctypes.Structure, ctypes.Union, ctypes.Array)) or _is_pointer_type(ftype):
            offset = getattr(type(struct), name).offset
            return self.ctypes_object(ftype.from_address(ctypes.addressof(struct) + offset))
        return self.value(getattr(struct, name))


def _write(ctype, address, data, address_for):
    """Writes serialised `data` back into the ctypes object of type `ctype` at `address`."""
    if _is_pointer_type(ctype):
        ctypes.c_void_p.from_address(address).value = address_for(data)
    elif _is_char_array_type(ctype):
        raw = _encode(data or "")[:ctypes.sizeof(ctype) - 1] + b"\0"
        ctypes.memmove(address, raw, len(raw))
    elif issubclass(ctype, ctypes.Array):
        step = ctypes.sizeof(ctype._type_)
        for position, item in enumerate(data[:ctype._length_]):
            _write(ctype._type_, address + position * step, item, address_for)
    elif issubclass(ctype, ctypes.Union):
        raw = bytes.fromhex(data)[:ctypes.sizeof(ctype)]
        ctypes.memmove(address, raw, len(raw))
    elif issubclass(ctype, ctypes.Structure):
        _write_struct(ctype, address, data, address_for)
    elif data is not None:
        ctype.from_address(address).value = _encode(data) if isinstance(data, str) else data


def _write_struct(ctype, address, data, address_for):
    instance = ctype.from_address(address)
    for name, ftype, bits in _struct_fields(ctype):
        if name not in data:
            continue
        if bits is None and (issubclass(ftype, (ctypes.Structure, ctypes.Union, ctypes.Array))
                             or _is_pointer_type(ftype)):
            _write(ftype, address + getattr(ctype, name).offset, data[name], address_for)
        elif data[name] is not None:
            value = data[name]
            ctypes.Structure.__setattr__(instance, name, _encode(value) if isinstance(value, str) else value)


def _write_argument(arg, data, address_for):
    target = arg._obj if isinstance(arg, _CARG_TYPE) else arg
    _write(type(target), ctypes.addressof(target), data, address_for)


def _serialise_return(ret):
    return _decode(ret) if isinstance(ret, bytes) else ret


# ---------------------------------------------------------------- scrubbing

class Scrubber:
    """Replaces GPU serials and GPU-/MIG- UUIDs by fake values, the same fake for the same real value.

    One scrubber serves a whole recording: NVML answers, and the files and command outputs of the
    host (nvidia-smi XML, kernel log lines), so a replayed fixture stays consistent."""

    def __init__(self):
        self._uuids = {}
        self._serials = {}

    def learn_serials(self, fn, ret, out):
        if fn in _SERIAL_FUNCTIONS and ret == 0:
            for value in out.values():
                if isinstance(value, str):
                    self.learn_serial(value)

    def learn_serial(self, value):
        value = value.strip()
        if value and value not in self._serials:
            self._serials[value] = "SCRUBBED%05d" % (len(self._serials) + 1)

    def free_text(self, text):
        """A whole file or command output: UUIDs anywhere, and every serial learned so far."""
        text = _UUID_RE.sub(self._fake_uuid, text)
        for real, fake in self._serials.items():
            if len(real) >= _MIN_SERIAL_LENGTH:
                text = text.replace(real, fake)
        return text

    def data(self, data):
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, list):
            return [self.data(item) for item in data]
        if isinstance(data, dict):
            return dict((key, self.data(value)) for key, value in data.items())
        return data

    def text(self, text):
        if text in self._serials:
            return self._serials[text]
        return _UUID_RE.sub(self._fake_uuid, text)

    def _fake_uuid(self, match):
        real = match.group("hex").lower()
        if real not in self._uuids:
            self._uuids[real] = "00000000-0000-4000-8000-%012x" % (len(self._uuids) + 1)
        return "%s-%s" % (match.group("prefix"), self._uuids[real])


# ---------------------------------------------------------------- recording

class _RecordingFunction:
    """Calls one real C function and records it; restype set by pynvml goes to the real function."""

    def __init__(self, library, name, real):
        self._library = library
        self._name = name
        self._real = real

    @property
    def restype(self):
        return getattr(self._real, "restype", None)

    @restype.setter
    def restype(self, value):
        try:
            self._real.restype = value
        except AttributeError:
            pass

    def __call__(self, *args):
        before = self._library.serialise_args(args)
        ret = self._real(*args)
        self._library.record(self._name, args, before, ret)
        return ret


class RecordingLibrary:
    """Wraps a ctypes CDLL of libnvidia-ml (or anything with the same C functions) and records every call."""

    def __init__(self, real_lib, scrub=True, scrubber=None):
        self._real = real_lib
        self._scrubber = (scrubber or Scrubber()) if scrub else None
        self._lock = threading.RLock()
        self._tokens = {}
        self._serialiser = _Serialiser(self._token_for)
        self._missing = set()
        self._error_strings = set()
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            real = getattr(self._real, name)
        except AttributeError:
            self._record_missing(name)
            raise
        return _RecordingFunction(self, name, real)

    def _token_for(self, address):
        if not address:
            return None
        if address not in self._tokens:
            self._tokens[address] = "%s%d" % (HANDLE_PREFIX, len(self._tokens) + 1)
        return self._tokens[address]

    def serialise_args(self, args):
        with self._lock:
            return [self._serialiser.value(arg) for arg in args]

    def record(self, name, args, before, ret):
        with self._lock:
            out = dict((str(position), self._serialiser.value(arg))
                       for position, arg in enumerate(args) if _is_by_reference(arg))
            if self._scrubber is not None:
                self._scrubber.learn_serials(name, ret, out)
                before, out = self._scrubber.data(before), self._scrubber.data(out)
            self.calls.append({"fn": name, "args": before, "ret": _serialise_return(ret), "out": out})
            if name == _ERROR_STRING_FN and before:
                self._error_strings.add(before[0])
        if isinstance(ret, int) and ret != 0 and name != _ERROR_STRING_FN:
            self._record_error_string(ret)

    def _record_missing(self, name):
        with self._lock:
            if name not in self._missing:
                self._missing.add(name)
                self.calls.append({"fn": name, "missing": True})

    def _record_error_string(self, code):
        with self._lock:
            if code in self._error_strings:
                return
            self._error_strings.add(code)
        try:
            function = getattr(self, _ERROR_STRING_FN)
        except AttributeError:
            return
        function.restype = ctypes.c_char_p
        function(code)


# ---------------------------------------------------------------- replay

def _call_key(name, args):
    return name, json.dumps(args, sort_keys=True)


class _ReplayFunction:
    def __init__(self, library, name):
        self._library = library
        self._name = name
        self.restype = ctypes.c_int

    def __call__(self, *args):
        return self._library.answer(self._name, args)


class ReplayLibrary:
    """Answers NVML C calls from recorded calls (a list, or a fixture_document dict)."""

    def __init__(self, fixture_calls):
        if isinstance(fixture_calls, dict):
            fixture_calls = fixture_calls.get("calls")
        fixture_calls = fixture_calls or []
        self._lock = threading.RLock()
        self._recorded = {}
        self._served = {}
        self._missing = set()
        self._addresses = {}
        self._tokens = {}
        self._serialiser = _Serialiser(self._token_for)
        for call in fixture_calls:
            if call.get("missing"):
                self._missing.add(call["fn"])
            else:
                self._recorded.setdefault(_call_key(call["fn"], call.get("args", [])), []).append(call)

    def __getattr__(self, name):
        if name.startswith("_") or name in self._missing:
            raise AttributeError(name)
        return _ReplayFunction(self, name)

    def _token_for(self, address):
        if not address:
            return None
        return self._tokens.get(address, "unrecorded-pointer:%#x" % address)

    def _address_for(self, token):
        if token is None:
            return None
        if token not in self._addresses:
            address = _FAKE_ADDRESS_BASE + _FAKE_ADDRESS_STEP * (len(self._addresses) + 1)
            self._addresses[token] = address
            self._tokens[address] = token
        return self._addresses[token]

    def _miss_message(self, name, state):
        others = sum(len(calls) for (fn, _args), calls in self._recorded.items() if fn == name)
        return "NVML call not in the fixture: %s(%s); the fixture holds %d call(s) of %s with other arguments" % (
            name, state[1:-1], others, name)

    def answer(self, name, args):
        with self._lock:
            state = [self._serialiser.value(arg) for arg in args]
            key = _call_key(name, state)
            calls = self._recorded.get(key)
            if not calls:
                raise FixtureMiss(self._miss_message(name, key[1]))
            served = self._served.get(key, 0)
            self._served[key] = served + 1
            call = calls[min(served, len(calls) - 1)]
            for position, data in call.get("out", {}).items():
                _write_argument(args[int(position)], data, self._address_for)
        ret = call.get("ret")
        return _encode(ret) if isinstance(ret, str) else ret


# ---------------------------------------------------------------- installing and documents

@contextlib.contextmanager
def use_library(pynvml_module, lib):
    """Installs `lib` as pynvml.nvmlLib for the duration; restores pynvml's previous state after."""
    cache = pynvml_module._nvmlGetFunctionPointer_cache
    saved_lib = pynvml_module.nvmlLib
    saved_cache = dict(cache)
    saved_refcount = getattr(pynvml_module, "_nvmlLib_refcount", None)
    pynvml_module.nvmlLib = lib
    cache.clear()
    try:
        yield lib
    finally:
        pynvml_module.nvmlLib = saved_lib
        cache.clear()
        cache.update(saved_cache)
        if saved_refcount is not None:
            pynvml_module._nvmlLib_refcount = saved_refcount


def _pynvml_version():
    try:
        # here: only a recording asks for pynvml's version, and importlib.metadata is Python 3.8+ (older targets)
        from importlib import metadata
    except ImportError:
        metadata = None
    if metadata is not None:
        for distribution in ("nvidia-ml-py", "pynvml"):
            try:
                return metadata.version(distribution)
            except metadata.PackageNotFoundError:
                continue
    return getattr(sys.modules.get("pynvml"), "__version__", None)


def fixture_document(recording_library, pynvml_version=None):
    """The JSON-able fixture of a RecordingLibrary: {"pynvml_version": ..., "calls": [...]}."""
    return {
        "pynvml_version": pynvml_version or _pynvml_version(),
        "calls": list(recording_library.calls),
    }
