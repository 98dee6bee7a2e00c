"""Memory: the unified search, save and retrieve API over a vault (`api.Memory`)."""
