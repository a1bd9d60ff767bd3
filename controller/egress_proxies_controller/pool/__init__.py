"""The ProxyPool controller: an event-driven loop (controller.py) over pure decisions (spread,
rollout, status) and the API calls that create members, copy credentials and publish endpoints."""
