"""setuptools hook for the cffi extensions (the shim, the XPlane codecs); metadata lives in
pyproject.toml."""
from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder", "native/build_codec.py:ffibuilder"])
