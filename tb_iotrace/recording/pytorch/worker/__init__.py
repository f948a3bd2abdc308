"""The PyTorch recording inside a DataLoader worker: each fetched batch timed (:mod:`.fetch`)."""
