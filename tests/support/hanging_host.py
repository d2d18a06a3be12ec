"""A host whose commands hang on a chosen one, for the collector's deadline tests."""

import time


class HangingOn:
    """Wraps a simulated library; one C function blocks as NVML does on a GPU that fell off the bus."""

    def __init__(self, library, function, gpu_address_index, seconds):
        self._library = library
        self._function = function
        self._seconds = seconds
        self._index = gpu_address_index

    def __getattr__(self, name):
        real = getattr(self._library, name)
        if name != self._function:
            return real

        def blocking(*args):
            if int(getattr(args[0], "value", args[0])) == self._index:
                time.sleep(self._seconds)
            return real(*args)
        blocking.restype = real.restype
        return blocking
