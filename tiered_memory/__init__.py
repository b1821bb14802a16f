"""tiered-memory: a tiered, git-versioned Markdown memory vault for people and AI agents."""

__version__ = "0.1.0"
