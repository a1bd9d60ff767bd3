"""The Proxy controller: its snapshot model, the pure reconciler, the loop that dispatches keys to
runs and writes what the answers say (controller.py), and what a run needs before it starts."""
