# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Pure builders for what one proxy puts into a cluster: a Squid Pod and the ConfigMap that
carries its squid.conf; and the pure reading of a Pod back into a contract state.

Called by ``provider.py``; unit-tested without a cluster. Guarantees: the Pod carries the
three marks as labels; its squid.conf comes from the shared ``squid_conf.render`` (access only
from ``allowedSourceRanges``, never ``allow all``); it runs non-root, without privilege
escalation, with every capability dropped, a read-only root filesystem and the configured
resources; it is owned by the Proxy (``crawl.example.com/v1alpha1``) when the request names
one in the Pod's own namespace (an owner in another namespace is invalid and would make the
garbage collector delete the Pod). With ``auth`` the Pod also mounts the proxy's password
Secret (``build_secret``: the salted hash only, owned by the Pod like the ConfigMap), readable
by Squid's group only, and its squid.conf asks for basic auth against it.
"""

from __future__ import annotations

import base64

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.squid_conf import (
    SquidSettings,
    render,
)

PROXY_API_VERSION = "crawl.example.com/v1alpha1"
PROXY_KIND = "Proxy"
CONTAINER_NAME = "squid"
CONF_DIR = "/etc/squid-egress"
CONF_KEY = "squid.conf"
AUTH_DIR = "/etc/squid-egress-auth"
AUTH_KEY = "passwd"
AUTH_VOLUME = "auth"
AUTH_FILE_MODE = 0o440  # root-owned in the volume; Squid reads it through fsGroup
LABEL_APP = "app.kubernetes.io/name"
LABEL_APP_VALUE = "egress-proxy"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_MANAGED_BY_VALUE = "crawl.egress_proxies"
ANNOTATION_PROXY = "crawl.example.com/proxy"
# Squid needs somewhere writable for its runtime files; the root filesystem stays read-only.
SCRATCH_DIRS = {"tmp": "/tmp", "run": "/var/run/squid", "spool": "/var/spool/squid", "logs": "/var/log/squid"}
# Below this port a non-root process may only listen when the Pod lowers the threshold.
UNPRIVILEGED_PORT_START = 1024


def squid_config(name: str, port: int, allowed, with_auth: bool = False) -> str:
    """The squid.conf of one proxy; logs go to the container's stdout and stderr."""
    return render(
        SquidSettings(
            listen=str(port),
            allowed=tuple(allowed),
            pid_file="none",
            cache_log="/dev/stderr",
            access_log="/dev/stdout",
            coredump_dir="/tmp",
            visible_hostname=name,
            auth_file="%s/%s" % (AUTH_DIR, AUTH_KEY) if with_auth else "",
        )
    )


def labels(uid: str, installation: str, provider: str = "") -> dict:
    out = names.marks(uid, installation, provider)
    out[LABEL_APP] = LABEL_APP_VALUE
    out[LABEL_MANAGED_BY] = LABEL_MANAGED_BY_VALUE
    return out


def owner_reference(req: contract.CreateRequest, namespace: str):
    """The Proxy as controlling owner, or ``None`` when not asked or none is named in ``namespace``.

    Only when asked (the controller, whose uid is the Proxy's UID): a playbook's uid that is
    not a real Proxy's would have the Pod garbage-collected by Kubernetes at once."""
    if not req.owner_reference:
        return None
    if not (req.namespace and req.proxy_name and req.uid) or req.namespace != namespace:
        return None
    return {
        "apiVersion": PROXY_API_VERSION,
        "kind": PROXY_KIND,
        "name": req.proxy_name,
        "uid": req.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def build_pod(
    req: contract.CreateRequest, namespace: str, installation: str, config, provider: str = ""
) -> dict:
    """The Pod for ``req`` in ``namespace``; ``config`` is the ``KubernetesConfig`` block. The
    Pod is marked with ``provider``: two providers on one namespace each list only their own."""
    port = int(req.port)
    metadata = {"name": req.name, "namespace": namespace, "labels": labels(req.uid, installation, provider)}
    if req.proxy_name:
        metadata["annotations"] = {ANNOTATION_PROXY: "%s/%s" % (req.namespace or namespace, req.proxy_name)}
    owner = owner_reference(req, namespace)
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    pod_security = {
        "runAsNonRoot": True,
        "runAsUser": config.run_as_user,
        "runAsGroup": config.run_as_user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if req.auth is not None:
        pod_security["fsGroup"] = config.run_as_user  # the Secret's files are group-readable only
    if port < UNPRIVILEGED_PORT_START:
        # A namespaced, "safe" sysctl: lets the non-root Squid bind a low port without any capability.
        pod_security["sysctls"] = [{"name": "net.ipv4.ip_unprivileged_port_start", "value": str(port)}]
    probe = {"tcpSocket": {"port": port}, "periodSeconds": 10, "timeoutSeconds": 2}
    resources = {}
    if config.resources.requests:
        resources["requests"] = dict(config.resources.requests)
    if config.resources.limits:
        resources["limits"] = dict(config.resources.limits)
    container = {
        "name": CONTAINER_NAME,
        "image": config.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["squid", "-N", "-f", "%s/%s" % (CONF_DIR, CONF_KEY)],
        "ports": [{"name": "proxy", "containerPort": port, "protocol": "TCP"}],
        "resources": resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "readinessProbe": dict(probe, initialDelaySeconds=1),
        "livenessProbe": dict(probe, initialDelaySeconds=10, failureThreshold=3),
        "volumeMounts": [{"name": "config", "mountPath": CONF_DIR, "readOnly": True}]
        + [{"name": vol, "mountPath": path} for vol, path in SCRATCH_DIRS.items()],
    }
    volumes = [{"name": "config", "configMap": {"name": req.name}}]
    volumes += [{"name": vol, "emptyDir": {"sizeLimit": "64Mi"}} for vol in SCRATCH_DIRS]
    if req.auth is not None:
        container["volumeMounts"].append({"name": AUTH_VOLUME, "mountPath": AUTH_DIR, "readOnly": True})
        volumes.append(
            {"name": AUTH_VOLUME, "secret": {"secretName": req.name, "defaultMode": AUTH_FILE_MODE}}
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 5,
            "securityContext": pod_security,
            "containers": [container],
            "volumes": volumes,
        },
    }


def fixed_fields(pod: dict) -> dict:
    """``{"port": n}``: the ``proxy`` containerPort of a Pod's Squid as the API server answers it
    (JSON), the port ``build_pod`` made it listen on; ``{}`` when it has none (not built here)."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    for container in spec.get("containers") or ():
        if isinstance(container, dict) and container.get("name") == CONTAINER_NAME:
            for port in container.get("ports") or ():
                if (
                    isinstance(port, dict)
                    and port.get("name") == "proxy"
                    and isinstance(port.get("containerPort"), int)
                ):
                    return {"port": port["containerPort"]}
    return {}


def has_auth_volume(pod) -> bool:
    """Whether a Pod (a client model) was built with the password Secret mounted."""
    return any(v.name == AUTH_VOLUME and v.secret is not None for v in (pod.spec.volumes or ()))


def _owned_metadata(req: contract.CreateRequest, namespace: str, installation: str, pod_uid: str) -> dict:
    """Marked ours and owned by the Pod, so it can never outlive it."""
    return {
        "name": req.name,
        "namespace": namespace,
        "labels": labels(req.uid, installation),
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": req.name,
                "uid": pod_uid,
                "blockOwnerDeletion": False,
            }
        ],
    }


def build_config_map(
    req: contract.CreateRequest, namespace: str, installation: str, config, pod_uid: str
) -> dict:
    """The squid.conf ConfigMap, owned by the Pod so it can never outlive it."""
    conf = squid_config(req.name, int(req.port), config.allowed_source_ranges, req.auth is not None)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _owned_metadata(req, namespace, installation, pod_uid),
        "data": {CONF_KEY: conf},
    }


def build_secret(
    req: contract.CreateRequest, namespace: str, installation: str, pod_uid: str, line: str
) -> dict:
    """The password Secret: ``line`` is ``username:$6$...`` (the hash, never the cleartext)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _owned_metadata(req, namespace, installation, pod_uid),
        "data": {AUTH_KEY: base64.b64encode(line.encode("utf-8")).decode("ascii")},
    }


def state_of(phase: str, pod_ip: str, deleting: bool, ready: bool) -> str:
    """The contract state of a Pod (docs/kubernetes-provider.md has the table).

    A Pod being deleted is never Running: it will not recover, and reading it as healthy would
    hide that its name is about to free up. Running needs an IP and the readiness probe passed.
    A phase Kubernetes does not define is Stopped, the blueprint's rule for unknown states.
    """
    if deleting:
        return contract.TERMINATED
    if phase == "Pending":
        return contract.PROVISIONING
    if phase == "Running":
        return contract.RUNNING if pod_ip and ready else contract.PROVISIONING
    if phase in ("Succeeded", "Failed", "Unknown"):
        return contract.TERMINATED
    return contract.STOPPED


def pod_ready(conditions) -> bool:
    """Whether the Pod's ``Ready`` condition is True (conditions as client models or dicts)."""
    for cond in conditions or ():
        kind = cond.get("type") if isinstance(cond, dict) else cond.type
        status = cond.get("status") if isinstance(cond, dict) else cond.status
        if kind == "Ready":
            return status == "True"
    return False
