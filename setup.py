"""setuptools hook for the cffi extension; metadata lives in pyproject.toml."""
from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder"])
