"""One identity: the kubernetes provider's module runs use the controller's own credentials.

The modules run in ansible-runner's child processes, which never see the controller's
``--kubeconfig``/``--context``: out of cluster they fell back to ``$KUBECONFIG`` (often a cluster
admin's). The runs get the flags as ``K8S_AUTH_KUBECONFIG``/``K8S_AUTH_CONTEXT``, which the
kubernetes block reads only for what it leaves out (providers/kubernetes/connection.py), so a
providers file that names its own kubeconfig or credentials still wins. ``describe`` is the start
line that says which identity each provider uses; it never shows a token.
"""

from __future__ import annotations

import os

IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def run_environment(kubeconfig: str | None, context: str | None) -> dict:
    """The variables that give the runs the controller's ``--kubeconfig``/``--context`` (absolute:
    the runs start in their own directories)."""
    env = {}
    if kubeconfig:
        env["K8S_AUTH_KUBECONFIG"] = os.path.abspath(kubeconfig)
    if context:
        env["K8S_AUTH_CONTEXT"] = context
    return env


def _kubeconfig(path: str | None, context: str | None) -> str:
    return "kubeconfig %s, %s" % (
        path or "(default: $KUBECONFIG or ~/.kube/config)",
        "context %s" % context if context else "its current context",
    )


def describe(entry: dict, run_env: dict, environ=None) -> str:
    """Which identity the provider ``entry`` (of the providers file) acts as, in words
    (``environ``: the controller's environment, ``os.environ`` unless a test gives one)."""
    environ = os.environ if environ is None else environ
    if entry.get("type") != "kubernetes":
        return "the credentials its %s block names" % entry.get("type")
    block = entry.get("kubernetes") or {}
    env = {**environ, **run_env}
    for key, variable in (("apiKey", "K8S_AUTH_API_KEY"), ("clientCert", "K8S_AUTH_CLIENT_CERT")):
        if block.get(key):
            return "the providers file's %s for %s" % (key, block.get("host") or "its host")
        if env.get(variable):
            return "%s from the controller's environment" % variable
    if block.get("kubeconfig") or block.get("context"):
        return "the providers file's " + _kubeconfig(block.get("kubeconfig"), block.get("context"))
    path, context = env.get("K8S_AUTH_KUBECONFIG"), env.get("K8S_AUTH_CONTEXT")
    if path or context:
        source = "--kubeconfig" if run_env else "K8S_AUTH_KUBECONFIG"
        return "the controller's own %s (%s)" % (_kubeconfig(path, context), source)
    if environ.get("KUBERNETES_SERVICE_HOST") and os.path.exists(IN_CLUSTER_TOKEN):
        return "the in-cluster ServiceAccount (the controller's own)"
    return _kubeconfig(None, None) + ", as the controller"
