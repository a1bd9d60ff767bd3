# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The kubernetes provider's health check: one target, ``apiserver``.

Called by ``KubernetesProvider.check``. It proves what the provider needs, with the provider's
own credentials: the server answers (its version goes into the details), and
SelfSubjectAccessReviews say the identity may list Pods cluster-wide (``list_by_tag``) and
create, read and delete Pods and ConfigMaps where Proxies go (the configured namespace, or
every namespace). It never raises: every failure is a ``TargetStatus`` with ``ready=False``
and one of the shared reasons (plus ``ClientConfigInvalid`` and ``ClientLibraryMissing``, which
an admin fixes on the module host, not in the cluster).
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    CredentialsUnavailable,
    CredentialsUnsafe,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import sdk
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.classify import (
    status_of,
)

TARGET = "apiserver"
REASON_CONFIG = "ClientConfigInvalid"
REASON_LIBRARY = "ClientLibraryMissing"
MESSAGE_LIMIT = 500

# (verb, resource, cluster_wide): what create, get, delete and list_by_tag do.
REQUIRED_RIGHTS = (
    ("list", "pods", True),
    ("create", "pods", False),
    ("get", "pods", False),
    ("delete", "pods", False),
    ("create", "configmaps", False),
    ("get", "configmaps", False),
    ("update", "configmaps", False),
    ("delete", "configmaps", False),
)


def reason_for(exc: BaseException) -> str:
    """The shared reason for a failed check (table-tested with ``classify``)."""
    if isinstance(exc, DeadlineExceeded) or sdk.is_timeout(exc):
        return contract.REASON_TIMEOUT
    if isinstance(exc, sdk.SDKMissing):
        return REASON_LIBRARY
    if isinstance(exc, sdk.ConfigException | CredentialsUnavailable | CredentialsUnsafe):
        return REASON_CONFIG
    if isinstance(exc, sdk.ApiException):
        code = status_of(exc)[0]
        if code == 401:
            return contract.REASON_UNAUTHORIZED
        if code == 403:
            return contract.REASON_FORBIDDEN
        if code == 0:
            return contract.REASON_UNREACHABLE
        return contract.REASON_API_ERROR
    return contract.REASON_UNREACHABLE


def _describe(exc: BaseException) -> str:
    if isinstance(exc, sdk.ApiException):
        code, reason, message = status_of(exc)
        return ("%s %s: %s" % (code, reason, message))[:MESSAGE_LIMIT]
    return ("%s: %s" % (type(exc).__name__, exc))[:MESSAGE_LIMIT]


def check_apiserver(provider, deadline) -> contract.TargetStatus:
    namespace = provider.config.namespace or ""
    details = {"namespace": namespace or "*"}
    address = ""
    try:
        client = provider._api_client(deadline)
        address = client.configuration.host
        timeout = provider._timeout
        version = sdk.k8s_client.VersionApi(client).get_code(_request_timeout=timeout(deadline, "check"))
        details["serverVersion"] = version.git_version
        try:
            review = sdk.k8s_client.AuthenticationV1Api(client).create_self_subject_review(
                {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                _request_timeout=timeout(deadline, "check"),
            )
            details["user"] = review.status.user_info.username
        except sdk.ApiException:
            pass  # who we are is a nicety; servers before 1.28 do not answer it
        authz = sdk.k8s_client.AuthorizationV1Api(client)
        missing = []
        for verb, resource, cluster_wide in REQUIRED_RIGHTS:
            scope = "" if cluster_wide else namespace
            answer = authz.create_self_subject_access_review(
                {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectAccessReview",
                    "spec": {"resourceAttributes": {"namespace": scope, "verb": verb, "resource": resource}},
                },
                _request_timeout=timeout(deadline, "check"),
            )
            if not answer.status.allowed:
                missing.append(
                    "%s %s (%s)" % (verb, resource, "namespace " + scope if scope else "all namespaces")
                )
        if missing:
            details["missingRights"] = missing
            return contract.TargetStatus(
                TARGET,
                address,
                False,
                contract.REASON_FORBIDDEN,
                "not allowed to " + ", ".join(missing),
                details,
            )
        return contract.TargetStatus(
            TARGET,
            address,
            True,
            contract.REASON_REACHABLE,
            "API server %s; list and create rights confirmed" % version.git_version,
            details,
        )
    except Exception as exc:  # a check never raises
        return contract.TargetStatus(TARGET, address, False, reason_for(exc), _describe(exc), details)
