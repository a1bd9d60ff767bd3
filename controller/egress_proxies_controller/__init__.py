"""egress-proxies controller: reconciles ``Proxy`` resources through the collection's modules.

Layers (each its own module): ``informer`` (list+watch into a cache) -> ``workqueue`` (due keys,
de-duplicated, rate-limited) -> ``reconciler`` (pure: object + last result -> next step) ->
``executor`` (one ansible-runner run of the modules' batch form per provider per tick) -> ``status``
(status subresource and finalizer writes, Events). ``manager`` wires them; ``__main__`` parses flags.
"""
