"""Environment-independent device code shared by warpsim's environments."""
