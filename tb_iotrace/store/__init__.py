"""The formats on disk and in buckets: XPlane codecs, whole-run records, Kineto traces, file tables, logdirs and URLs."""
