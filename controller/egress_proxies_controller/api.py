"""Names of the API this controller serves: group, version, kinds, finalizer, annotations."""

from __future__ import annotations

GROUP = "crawl.example.com"
VERSION = "v1alpha1"
PROXY_PLURAL = "proxies"
PROXY_KIND = "Proxy"
HEALTH_PLURAL = "providerhealths"
HEALTH_KIND = "ProviderHealth"

#: the source component of every Event the controller records (Proxies, pools, Leases)
EVENT_COMPONENT = "egress-proxies-controller"

FINALIZER = "crawl.example.com/proxy-cleanup"
SKIP_CLEANUP_ANNOTATION = "crawl.example.com/skip-cleanup"

COND_READY = "Ready"
COND_QUOTA = "QuotaExceeded"
COND_PERMANENT = "PermanentError"
COND_HEALTHY = "Healthy"
COND_PROVIDER_REACHABLE = "ProviderReachable"
COND_CREDENTIALS = "CredentialsApplied"  # only on a Proxy with spec.auth

REASON_SECRET_UNAVAILABLE = "SecretUnavailable"
# The module's reason for a Permanent create/poll whose credentials only a new instance can have
# (errors.REASON_CREDENTIALS_FIXED): the controller replaces the instance instead of latching.
REASON_CREDENTIALS_FIXED = "CredentialsFixedAtCreation"
REASON_CREDENTIALS_CHANGED = "CredentialsChanged"
# status.specHash while such a replacement is under way: no spec hashes to it, so every plan
# replaces (deletes the old instance, then creates) until the new instance's create records its
# real hash. Kept in status, so a controller restarted mid-way goes on replacing.
SPEC_HASH_CREDENTIALS_CHANGED = "credentials-changed"
# The module's reason when an existing instance listens on another port than the spec's
# (errors.REASON_PORT_FIXED): found by a create after a crash and a port edit, it is replaced
# the way a spec change replaces, with status.specHash set to this value no spec hashes to.
REASON_PORT_FIXED = "PortFixedAtCreation"
SPEC_HASH_PORT_CHANGED = "port-changed"

REASON_PROVIDER_NOT_CONFIGURED = "ProviderNotConfigured"
REASON_OLD_PROVIDER_NOT_CONFIGURED = "OldProviderNotConfigured"
