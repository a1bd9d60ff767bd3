# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Whether a host can run guests of its configured ``domainType``: the health check's answer.

Why: a host whose KVM cannot start guests (nested virtualisation that qemu rejects, a missing
/dev/kvm, a kernel without the module) fails every create with a Transient error, so a fleet on
it retries for ever. The check tells the admin instead, two ways:

- libvirt's answer for the type (one small call, ``virConnectGetMaxVcpus``: for ``kvm`` it
  opens /dev/kvm and asks the kernel): a type the host cannot run is
  ``DomainTypeUnsupported``. (``virConnectGetDomainCapabilities`` would say more, but its 9 KB
  reply stalls libvirt's libssh transport for as long as the call is allowed.)
- the host CPU's features in its capabilities: a ``kvm`` host whose CPU shows neither ``vmx``
  nor ``svm`` has a KVM without hardware virtualisation (a software one such as kvm_pvm, which
  runs only guest kernels built for it). Its guests start, as libvirt sees it, then never run
  or pause on an emulation failure: it is ``DomainTypeUnsupported``, and a create there fails
  Transient with the fix instead of making a guest that never comes up.
- what the host's own guests say: domains of ours that failed to start (shut off, reason
  ``failed``) or that stopped on an emulation failure (paused, reason ``crashed`` or
  ``unknown``, or crashed) are ``GuestsFailing``, with the names; that is how a nested KVM
  whose capabilities look fine but whose guests die ("failed to set MSR", "KVM internal
  error") shows itself.

Both are pure over the connection seam, so the fake and libvirt answer alike.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import backend

REASON_DOMAIN_TYPE_UNSUPPORTED = "DomainTypeUnsupported"
REASON_GUESTS_FAILING = "GuestsFailing"
FIX_HINT = (
    "set domainType: qemu for this host (TCG: slower, but it runs anywhere) or fix the host's "
    "KVM; see docs/libvirt-provider.md"
)
# What qemu says when the host's KVM cannot run the guest (nested virtualisation it rejects, no
# access to /dev/kvm, no module): a create failing so gets the hint in its message.
KVM_START_FAILURES = (
    "failed to set MSR",
    "kvm_buf_set_msrs",
    "KVM internal error",
    "Could not access KVM kernel module",
    "failed to initialize kvm",
    "KVM is not supported",
)
# virDomainShutoffReason / virDomainPausedReason values (libvirt's stable ABI).
SHUTOFF_FAILED = 6
PAUSED_UNKNOWN = 0
PAUSED_CRASHED = 10
NAMES_SHOWN = 3
# CPU features of hardware virtualisation (Intel VT-x, AMD-V) in a host's capabilities XML.
HARDWARE_VIRTUALISATION = frozenset({"vmx", "svm"})
# Refusals of the max-vcpus call that mean "no such domain type here".
UNSUPPORTED_CODES = (
    backend.ERR_NO_SUPPORT,
    backend.ERR_INVALID_ARG,
    backend.ERR_CONFIG_UNSUPPORTED,
    backend.ERR_OPERATION_UNSUPPORTED,
)


def with_hint(exc: BaseException, domain_type: str) -> BaseException:
    """``exc`` with the fix in its message when it is a KVM guest that could not start."""
    text = str(exc)
    if domain_type != "kvm" or not isinstance(exc, backend.LibvirtCallError):
        return exc
    if not any(marker in text for marker in KVM_START_FAILURES):
        return exc
    hinted = backend.LibvirtCallError(
        exc.code, "%s; the host's KVM cannot start this guest: %s" % (text, FIX_HINT), exc.domain
    )
    hinted.__cause__ = exc
    return hinted


def capability_problem(conn, domain_type: str) -> str:
    """Why the host cannot run ``domain_type`` guests, or ``""``."""
    try:
        conn.max_vcpus(domain_type)
    except backend.LibvirtCallError as exc:
        no_device = exc.code == backend.ERR_SYSTEM_ERROR and "/dev/kvm" in str(exc)
        if exc.code in UNSUPPORTED_CODES or no_device:
            return "the host cannot run domainType %s guests: %s" % (domain_type, exc)
        raise
    if domain_type != "kvm":
        return ""
    try:
        caps = conn.capabilities()
    except backend.LibvirtCallError as exc:
        if exc.code in UNSUPPORTED_CODES:
            return ""  # cannot tell: the guests' own state still will
        raise
    return software_kvm_problem(caps)


def software_kvm_problem(capabilities_xml: str) -> str:
    """Why a host whose /dev/kvm works still cannot run ordinary KVM guests, or ``""``: its
    CPU lists features but neither ``vmx`` nor ``svm``. A capabilities document without a CPU
    feature list says nothing either way (``""``)."""
    try:
        root = ET.fromstring(capabilities_xml)
    except ET.ParseError:
        return ""
    features = {f.get("name") for f in root.findall("./host/cpu/feature")}
    if not features or features & HARDWARE_VIRTUALISATION:
        return ""
    model = (root.findtext("./host/cpu/model") or "?").strip()
    return (
        "the host's KVM has no hardware virtualisation (its %s CPU shows neither vmx nor svm: a "
        "software KVM such as kvm_pvm, whose guests start but never run)" % model
    )


def failing_guests(conn, namespace_uri: str) -> list:
    """Names of this provider's domains on the host that failed to start or died in emulation."""
    failing = []
    for name in conn.domain_names():
        try:
            state, reason = conn.domain_state_reason(name)
        except backend.LibvirtCallError as exc:
            if exc.code == backend.ERR_NO_DOMAIN:
                continue  # gone since the listing
            raise
        if not _failed(state, reason):
            continue
        try:
            conn.domain_metadata(name, namespace_uri)
        except backend.LibvirtCallError as exc:
            if exc.code in (backend.ERR_NO_DOMAIN_METADATA, backend.ERR_NO_DOMAIN):
                continue  # not ours
            raise
        failing.append(name)
    return sorted(failing)


def _failed(state: int, reason: int) -> bool:
    if state == backend.DOMAIN_SHUTOFF:
        return reason == SHUTOFF_FAILED
    if state == backend.DOMAIN_PAUSED:
        return reason in (PAUSED_UNKNOWN, PAUSED_CRASHED)
    return state == backend.DOMAIN_CRASHED


def failing_message(names: list, domain_type: str) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    if len(names) > NAMES_SHOWN:
        shown += " and %d more" % (len(names) - NAMES_SHOWN)
    text = "%d guest(s) of ours failed to start or stopped on an emulation failure (%s)" % (
        len(names),
        shown,
    )
    if domain_type == "kvm":
        text += "; a host whose nested KVM cannot run guests looks like this: " + FIX_HINT
    return text
