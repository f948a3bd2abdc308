"""What the analysis and the tab read: the columnar tables of a capture and the one rule for steps and input wait."""
