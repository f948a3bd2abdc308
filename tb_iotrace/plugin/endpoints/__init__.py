"""The plugin's endpoints as pure functions, one module per endpoint: ``*_impl(view, ...) ->
dict`` (JSON-ready). They take a :class:`~tb_iotrace.plugin.request_view.View` and plain parameters
and know nothing about HTTP; :mod:`tb_iotrace.plugin.plugin` parses requests, calls them and
turns exceptions into status codes."""
