"""The periodic loops beside the reconcilers (leader only): orphan GC, the provider health
monitor and the proxy health engine, each a ``periodic.PeriodicLoop``."""
