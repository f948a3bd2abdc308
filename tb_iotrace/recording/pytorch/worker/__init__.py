"""The PyTorch recording inside a DataLoader worker: joining the window's recording, forked or
spawned, and serving the main process's messages (:mod:`.startup`); each fetched batch timed
(:mod:`.fetch`)."""
