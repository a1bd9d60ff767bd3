"""The one place the Kubernetes client is imported: clients and API calls the controller makes.

The other files that speak to the API server (the informer's watch, Leases, pools) take the
client's names from here (``client``, ``watch``, ``ApiException``), so a client upgrade or a
change of library touches this file's imports only.

Status goes through the status subresource with optimistic concurrency (the resourceVersion of
the snapshot the reconcile decided from), and the finalizer is patched the same way; neither is
retried nor re-read here: a conflict (409) raises ``Conflict`` and the caller requeues the key,
whose next reconcile decides from the newer object its watch delivers. Events are best effort: a
failed Event never fails a reconcile.
"""

from __future__ import annotations

import datetime
import logging

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from .. import api, version
from . import errors, events

__all__ = ["ApiException", "Conflict", "Kube", "StartupError", "client", "guarded", "load", "watch"]

log = logging.getLogger("egress_proxies_controller.kube.client")


class Conflict(Exception):
    """A write met a newer object (409): the caller's snapshot is stale, its key is requeued."""


class StartupError(Exception):
    """A mistake in the command line found at start: ``flag`` names the option to fix."""

    def __init__(self, flag: str, message: str):
        super().__init__("%s: %s" % (flag, message))
        self.flag = flag


def guarded(what: str, write):
    """One write guarded by resourceVersion, never retried: its answer, None when the object is
    gone (404), ``Conflict`` naming ``what`` when it changed since it was read (409)."""
    try:
        return write()
    except ApiException as exc:
        if exc.status == 404:
            return None
        if exc.status == 409:
            raise Conflict(what) from None
        raise


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


POOL_SIZE = 64  # connections kept open to the API server


def load(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """A client for the configured cluster that names itself egress-proxies-controller/<version>.

    A kubeconfig that cannot be read or used raises ``StartupError`` naming the flag (the
    client library answers a missing, unreadable or malformed file with anything from
    ConfigException to TypeError). Nothing is sent to the API server here: an API server that
    does not answer yet is waited for, not a start-up mistake."""
    # Imported here: --help, --version and a missing collection's one line need no collection.
    # collection first: it makes the collection's module_utils importable (collection.py)
    from .. import collection  # noqa: F401  # pylint: disable=unused-import

    # isort: split
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import yaml_reader

    if kubeconfig:
        try:  # the modules' reader: bounded, and its messages quote no line of the file (issue 40)
            doc = yaml_reader.load_file(kubeconfig, "kubeconfig")
        except yaml_reader.FileProblem as exc:
            raise StartupError("--kubeconfig", "%s: %s" % (kubeconfig, exc)) from None
        if not isinstance(doc, dict):
            raise StartupError(
                "--kubeconfig", "%s is not a kubeconfig (a YAML mapping is expected)" % kubeconfig
            )
    configuration = client.Configuration()
    try:
        if kubeconfig or context:
            config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        else:
            try:
                config.load_incluster_config(client_configuration=configuration)
            except config.ConfigException as incluster:
                try:
                    config.load_kube_config(client_configuration=configuration)
                except Exception as exc:
                    raise StartupError(
                        "--kubeconfig",
                        "not set, no in-cluster config (%s) and no usable default kubeconfig (%s)"
                        % (_one_line(incluster), _one_line(exc)),
                    ) from None
    except StartupError:
        raise
    except Exception as exc:  # the loader's errors have no common type (yaml, TypeError, ...)
        message = yaml_reader.yaml_error_text(exc) or _one_line(exc)
        if context and "context" in message.lower():
            raise StartupError(
                "--context", "%r in %s: %s" % (context, kubeconfig or "the kubeconfig", message)
            ) from None
        raise StartupError(
            "--kubeconfig", "%s is not a usable kubeconfig: %s" % (kubeconfig, message)
        ) from None
    # The client keeps 5 connections per CPU; the workers, Event senders, watches and loops
    # share this one, and urllib3 closes what does not fit: a TLS handshake per request beyond.
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, POOL_SIZE)
    api_client = client.ApiClient(configuration)
    api_client.user_agent = version.user_agent()
    return api_client


class Kube:
    def __init__(self, api_client: client.ApiClient, timeout: float = 30.0):
        self.api_client = api_client
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.coordination = client.CoordinationV1Api(api_client)
        self.timeout = timeout
        self.events = events.EventCorrelator()

    # -- Proxy objects -----------------------------------------------------------------

    def list_proxies(self, namespace: str | None, **kwargs) -> dict:
        if namespace:
            return self.custom.list_namespaced_custom_object(
                api.GROUP, api.VERSION, namespace, api.PROXY_PLURAL, **kwargs
            )
        return self.custom.list_cluster_custom_object(api.GROUP, api.VERSION, api.PROXY_PLURAL, **kwargs)

    def get_proxy(self, namespace: str, name: str) -> dict | None:
        try:
            return self.custom.get_namespaced_custom_object(
                api.GROUP, api.VERSION, namespace, api.PROXY_PLURAL, name, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def write_status(self, obj: dict, status: dict) -> dict | None:
        """Replace ``obj``'s status with ``status``, guarded by ``obj``'s resourceVersion: the
        written object, None when it is gone or ``status`` is already its status, ``Conflict``
        when the object changed since ``obj`` was read (the caller requeues its key)."""
        meta = obj["metadata"]
        if status == (obj.get("status") or {}):
            return None
        return guarded(
            "status of %s/%s" % (meta["namespace"], meta["name"]),
            lambda: self.custom.replace_namespaced_custom_object_status(
                api.GROUP,
                api.VERSION,
                meta["namespace"],
                api.PROXY_PLURAL,
                meta["name"],
                dict(obj, status=status),
                _request_timeout=self.timeout,
            ),
        )

    def set_finalizer(self, obj: dict, present: bool) -> dict | None:
        """Add or remove our finalizer with a patch guarded by ``obj``'s resourceVersion: the
        object written (``obj`` itself when nothing is to change), None when it is gone,
        ``Conflict`` when it changed since ``obj`` was read (the caller requeues its key)."""
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if (api.FINALIZER in finalizers) == present:
            return obj
        finalizers = (
            [*finalizers, api.FINALIZER] if present else [f for f in finalizers if f != api.FINALIZER]
        )
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        return guarded(
            "finalizer of %s/%s" % (meta["namespace"], meta["name"]),
            lambda: self.custom.patch_namespaced_custom_object(
                api.GROUP,
                api.VERSION,
                meta["namespace"],
                api.PROXY_PLURAL,
                meta["name"],
                patch,
                _request_timeout=self.timeout,
            ),
        )

    def secret_value(self, namespace: str, name: str, key: str) -> str:
        """A Secret's value; ``LookupError`` with a readable reason when it cannot be had."""
        return self.secret_values(namespace, name, (key,))[key]

    def secret_values(self, namespace: str, name: str, keys, what: str = "cloud-init") -> dict:
        """Some keys of one Secret, read with one get (never list or watch: RBAC grants get
        only); ``LookupError`` with a readable reason, never the content, when they cannot be had."""
        import base64

        try:
            secret = self.core.read_namespaced_secret(name, namespace, _request_timeout=self.timeout)
        except ApiException as exc:
            raise LookupError("%s Secret %s/%s: %s" % (what, namespace, name, exc.reason)) from None
        data = secret.data or {}
        out = {}
        for key in keys:
            if key not in data:
                raise LookupError("%s Secret %s/%s has no key %r" % (what, namespace, name, key))
            try:
                out[key] = base64.b64decode(data[key]).decode("utf-8")
            except (UnicodeDecodeError, ValueError):
                raise LookupError(
                    "%s Secret %s/%s key %r is not UTF-8 text (compressed or binary data is not "
                    "supported: store it as plain text)" % (what, namespace, name, key)
                ) from None
        return out

    # -- authenticated metrics (telemetry/metrics_auth.py) -------------------------------------------

    def token_review(self, token: str) -> dict | None:
        """Who ``token`` belongs to, as the API server says (a TokenReview): username, uid,
        groups, extra; None when it is not authenticated."""
        review = client.AuthenticationV1Api(self.api_client).create_token_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
            _request_timeout=self.timeout,
        )
        status = review.status
        if not status or not status.authenticated or not status.user:
            return None
        user = status.user
        return {
            "username": user.username or "",
            "uid": user.uid or "",
            "groups": list(user.groups or []),
            "extra": {k: list(v) for k, v in (user.extra or {}).items()},
        }

    def access_review(self, user: dict, path: str, verb: str) -> bool:
        """Whether ``user`` (a token_review answer) may ``verb`` the non-resource URL ``path``
        (a SubjectAccessReview)."""
        spec = {
            "user": user["username"],
            "groups": user["groups"],
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        review = client.AuthorizationV1Api(self.api_client).create_subject_access_review(
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
            _request_timeout=self.timeout,
        )
        return bool(review.status and review.status.allowed)

    # -- cluster-scoped objects (ProviderHealth) -------------------------------------------

    def get_cluster_object(self, plural: str, name: str) -> dict | None:
        try:
            return self.custom.get_cluster_custom_object(
                api.GROUP, api.VERSION, plural, name, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create_cluster_object(self, plural: str, body: dict) -> dict:
        return self.custom.create_cluster_custom_object(
            api.GROUP, api.VERSION, plural, body, _request_timeout=self.timeout
        )

    def replace_cluster_object_status(self, plural: str, body: dict) -> dict:
        return self.custom.replace_cluster_custom_object_status(
            api.GROUP, api.VERSION, plural, body["metadata"]["name"], body, _request_timeout=self.timeout
        )

    def list_cluster_objects(self, plural: str, label_selector: str) -> list:
        return self.custom.list_cluster_custom_object(
            api.GROUP, api.VERSION, plural, label_selector=label_selector, _request_timeout=self.timeout
        ).get("items", [])

    def delete_cluster_object(self, plural: str, name: str) -> None:
        try:
            self.custom.delete_cluster_custom_object(
                api.GROUP, api.VERSION, plural, name, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status != 404:
                raise

    def event(
        self,
        obj: dict,
        event_type: str,
        reason: str,
        message: str,
        component: str,
        kind: str = api.PROXY_KIND,
        api_version: str = "%s/%s" % (api.GROUP, api.VERSION),
    ) -> None:
        """Record an Event on ``obj``; a repeat of the same Event counts into the one recorded
        (kube/events.py). Best effort: a failed Event never fails a reconcile."""
        meta = obj["metadata"]
        message = message[:1024]
        involved = {
            "kind": kind,
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta.get("uid"),
        }
        key = events.event_key(involved, event_type, reason, message, component)
        try:
            if self._count_repeat(key):
                return
            created = self._create_event(obj, event_type, reason, message, component, kind, api_version)
            self.events.recorded(key, created.metadata.name, meta["namespace"], 1)
        except Exception as exc:
            log.warning(
                "event %s on %s/%s not recorded: %s",
                reason,
                meta["namespace"],
                meta["name"],
                errors.describe(exc),
            )

    def _count_repeat(self, key: tuple) -> bool:
        """Patch the count of the Event recorded for ``key``; False when there is none to patch."""
        recorded = self.events.repeat_of(key)
        if recorded is None:
            return False
        count = recorded.count + 1
        now = datetime.datetime.now(datetime.UTC)
        try:
            self.core.patch_namespaced_event(
                recorded.name,
                recorded.namespace,
                {"count": count, "lastTimestamp": now.isoformat().replace("+00:00", "Z")},
                _request_timeout=self.timeout,
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.events.forget(key)  # expired or deleted: record a new one
            return False
        self.events.recorded(key, recorded.name, recorded.namespace, count)
        return True

    def _create_event(self, obj, event_type, reason, message, component, kind, api_version):
        meta = obj["metadata"]
        now = datetime.datetime.now(datetime.UTC)
        body = client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name=meta["name"] + ".", namespace=meta["namespace"]),
            involved_object=client.V1ObjectReference(
                api_version=api_version,
                kind=kind,
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta.get("uid"),
                resource_version=meta.get("resourceVersion"),
            ),
            reason=reason,
            message=message,
            type=event_type,
            first_timestamp=now,
            last_timestamp=now,
            count=1,
            source=client.V1EventSource(component=component),
            reporting_component=component,
        )
        return self.core.create_namespaced_event(meta["namespace"], body, _request_timeout=self.timeout)
