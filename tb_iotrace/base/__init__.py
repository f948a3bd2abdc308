"""Pure rules every layer may use: record ids, framework releases, code paths, atomic writes, bounds on inputs, safe names, the progress line."""
