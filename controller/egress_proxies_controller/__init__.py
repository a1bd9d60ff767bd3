"""egress-proxies controller: reconciles ``Proxy`` and ``ProxyPool`` resources through the modules.

Folders are layers (docs/architecture.md, "Walk-throughs: the controller"): ``kube`` (list+watch
caches, the work queue, Events, conditions) -> ``proxy`` (the pure reconciler and the Proxy
controller that dispatches keys, batches them per provider and writes status) -> ``runs`` (one
ansible-runner run of the modules' batch form per provider); ``pool`` (the ProxyPool controller),
``loops`` (GC and health), ``sharding``, ``config`` and ``telemetry`` beside them. ``__main__``
wires them; ``flags`` is the command line.
"""
