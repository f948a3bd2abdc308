# The one list of C sources, read by CMakeLists.txt and by native/build_ffi.py.
set(TBIO_SOURCES
  native/counters.c
)
