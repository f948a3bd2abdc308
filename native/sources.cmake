# The one list of C sources, read by CMakeLists.txt and by native/build_ffi.py.
set(TBIO_SOURCES
  native/counters.c
  native/sys.c
  native/registry.c
  native/session.c
  native/got.c
  native/dlsearch.c
  native/wrappers.c
  native/api.c
  native/tfprof.c
  native/encode.c
  native/xdecode.c
)
