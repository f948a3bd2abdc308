# The one list of C sources of each module, read by CMakeLists.txt and by
# native/build_ffi.py (the shim, tb_iotrace._native) and native/build_codec.py
# (the XPlane codecs, tb_iotrace._codec).
set(TBIO_SOURCES
  native/counters.c
  native/sys.c
  native/registry.c
  native/recordid.c
  native/session.c
  native/timeseries.c
  native/got.c
  native/dlsearch.c
  native/hooks.c
  native/wrap_posix.c
  native/wrap_stdio.c
  native/wrap_dl.c
  native/wrap_fd.c
  native/wrap_net.c
  native/sockets.c
  native/api.c
  native/tfprof.c
  native/pjrt.c
)
set(TBIO_CODEC_SOURCES
  native/codec/encode.c
  native/codec/xdecode.c
)
