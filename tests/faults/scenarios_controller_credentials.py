"""A kubernetes provider's credentials rotated under a running controller (issue 16).

The provider ``k8srot`` names a kubeconfig file of the cell whose token is a TokenRequest token
of the controller's ServiceAccount bound to a Secret, so deleting that Secret revokes it at once
(the API server answers 401). The new token, bound to a second Secret, replaces the file
atomically, as kubelet swaps a Secret mount. Rotated right (new file, then the old token
revoked) or late (revoked first, a few polls answering 401, then the new file), every Proxy must
end Ready on the Pod it had, nothing latched, one Pod per Proxy, no token anywhere the
controller writes, nothing left once the Proxies are deleted.
"""

from __future__ import annotations

import copy
import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid

from controller.e2e_lib import CONTROLLER_NS, SA
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from faults import playbook_runs
from faults.controller_cells import get, gone, names, ready, run_pids, running, wait_all
from faults.results import Outcome
from faults.scenario import Scenario, no_fault

CONTROLLER = ("controller",)
PROVIDER = "k8srot"
LABEL_UID = "proxy-operator-uid"  # plugins/module_utils/core/names.py, on the provider's Pods
#: kwok Pods run no Squid: with the proxy health engine off, Ready means Running
NO_PROBES = ("--probe-interval", "0")


class Credentials:
    """Tokens of the controller's ServiceAccount, each bound to a Secret of its own, and the
    kubeconfig file ``path`` (0600) that holds the current one."""

    def __init__(self, env, directory: str):
        self.env, self.core = env, k8s.CoreV1Api(env.admin)
        self.path = os.path.join(directory, "k8srot.kubeconfig")
        self.tokens: list = []
        self.secrets: list = []

    def issue(self) -> tuple:
        """A new token bound to a new Secret: ``(token, secret name)``."""
        name = "credrot-" + uuid.uuid4().hex[:8]
        secret = self.core.create_namespaced_secret(CONTROLLER_NS, {"metadata": {"name": name}})
        ref = {"apiVersion": "v1", "kind": "Secret", "name": name, "uid": secret.metadata.uid}
        body = {"spec": {"expirationSeconds": 3600, "boundObjectRef": ref}}
        token = self.core.create_namespaced_service_account_token(SA, CONTROLLER_NS, body).status.token
        self.tokens.append(token)
        self.secrets.append(name)
        return token, name

    def write(self, token: str) -> None:
        """``token`` into the file at once: a temp file beside it, then ``os.replace``."""
        with open(self.env.kubeconfig, encoding="utf-8") as handle:
            doc = json.load(handle)
        for user in doc["users"]:
            user["user"] = {"token": token}
        tmp = "%s.%s.tmp" % (self.path, uuid.uuid4().hex[:6])
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(doc, handle)
        os.replace(tmp, self.path)

    def revoke(self, secret: str) -> None:
        try:
            self.core.delete_namespaced_secret(secret, CONTROLLER_NS)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def rejected(self, token: str) -> bool:
        """The API server answers ``token`` 401 (it caches a token's review for up to 10 s,
        so a revocation shows a few seconds after the Secret went)."""
        with open(self.env.kubeconfig, encoding="utf-8") as handle:
            cluster = json.load(handle)["clusters"][0]["cluster"]
        context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        request = urllib.request.Request(
            cluster["server"] + "/api", headers={"Authorization": "Bearer " + token}
        )
        try:
            with urllib.request.urlopen(request, timeout=5, context=context):
                return False
        except urllib.error.HTTPError as exc:
            return exc.code == 401

    def revoke_and_wait(self, outcome: Outcome, secret: str, token: str) -> None:
        """Delete ``secret`` and wait until its token is refused."""
        self.revoke(secret)
        if not playbook_runs.wait_for(lambda: self.rejected(token), 30):
            outcome.check(["the old token still accepted 30 s after its Secret was deleted"])

    def close(self) -> None:
        for secret in self.secrets:
            self.revoke(secret)


def _providers_with(env, path: str) -> dict:
    doc = copy.deepcopy(env.providers)
    doc["providers"].append({"name": PROVIDER, "type": "kubernetes", "kubernetes": {"kubeconfig": path}})
    return doc


def _in_use(env, outcome: Outcome, providers: dict) -> None:
    text = "in use: providers " + ", ".join(p["name"] for p in providers["providers"])
    if not playbook_runs.wait_for(lambda: text in env.controller.tail(10**7), 30):
        outcome.check(["the controller never logged %r" % text])


def _pods(env, uid: str) -> list:
    """The Pods (and their ConfigMaps) of the Proxy ``uid``, as the API server lists them."""
    core, selector = k8s.CoreV1Api(env.admin), "%s=%s" % (LABEL_UID, uid)
    pods = core.list_pod_for_all_namespaces(label_selector=selector).items
    maps = core.list_config_map_for_all_namespaces(label_selector=selector).items
    return ["pod %s/%s" % (p.metadata.namespace, p.metadata.name) for p in pods] + [
        "configmap %s/%s" % (m.metadata.namespace, m.metadata.name) for m in maps
    ]


def _only_pods(found: list) -> list:
    return [f for f in found if f.startswith("pod ")]


def _latched(objs: list) -> list:
    return [
        "%s latched PermanentError: %s" % (o["metadata"]["name"], c.get("message"))
        for o in objs
        for c in (o.get("status") or {}).get("conditions", [])
        if c.get("type") == "PermanentError" and c.get("status") == "True"
    ]


def _check(env, outcome: Outcome, proxies: list, provider_ids: dict, tokens: list) -> None:
    """Same Pods as before, nothing latched, one Pod per Proxy, no token in what the
    controller writes (its log, the Proxies' status and Events, its files)."""
    objs = [get(env, n) for n in proxies]
    now = {o["metadata"]["name"]: (o.get("status") or {}).get("providerID") for o in objs}
    outcome.check(
        [
            "%s providerID %s became %s" % (n, provider_ids[n], now[n])
            for n in proxies
            if now[n] != provider_ids[n]
        ]
    )
    outcome.check(_latched(objs))
    counts = {o["metadata"]["name"]: _only_pods(_pods(env, o["metadata"]["uid"])) for o in objs}
    outcome.check(["%s has %d Pods: %s" % (n, len(p), p) for n, p in counts.items() if len(p) != 1])
    texts = {"controller log": env.controller.tail(10**7), "status": json.dumps(objs)}
    for name in proxies:
        texts["events of %s" % name] = repr(env.events(name))
    for token in tokens:
        grep = subprocess.run(
            ["grep", "-rlF", token, env.controller.workdir], capture_output=True, text=True, check=False
        )
        for path in grep.stdout.split():
            texts["file %s" % path] = token
    outcome.check(
        [
            "token %d is in the %s" % (i, w)
            for i, t in enumerate(tokens)
            for w, text in texts.items()
            if t in text
        ]
    )


def _finish(env, outcome: Outcome, proxies: list) -> None:
    """Delete the Proxies: their Pods and ConfigMaps go, and every process of their runs."""
    uids = {n: get(env, n)["metadata"]["uid"] for n in proxies}
    outcome.calls.append("uids: %s" % uids)
    for name in proxies:
        env.delete(name)
    wait_all(env, outcome, proxies, gone, "deleted", 60)

    def left() -> list:
        return [f for u in uids.values() for f in _pods(env, u)]

    if not playbook_runs.wait_for(lambda: not left(), 30):
        outcome.check(["left behind: %s" % f for f in left()])
    else:
        outcome.check([])
    if not playbook_runs.wait_for(lambda: not run_pids(env), 30):
        outcome.check(["left behind: run process %d" % p for p in run_pids(env)])
    else:
        outcome.check([])


def _delete_leftovers(env, outcome: Outcome, proxies: list) -> None:
    """Proxies a cell that stopped early left: deleted while their provider is still configured."""
    left = [n for n in proxies if get(env, n) is not None]
    for name in left:
        env.delete(name)
    if left:
        wait_all(env, outcome, left, gone, "deleted after the cell stopped early", 60)


def _failed_ops(env) -> int:
    """The controller's count of the provider's operations that did not answer ok."""
    total = 0
    for line in env.controller.metrics().splitlines():
        if (
            line.startswith("egress_proxies_provider_operations_total{")
            and 'provider="%s"' % PROVIDER in line
        ) and 'class="ok"' not in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def rotated(revoke_first: bool):
    """The flow: a new token written, the old one revoked; or (``revoke_first``) revoked, two
    Running polls of each Proxy answering 401, then the new token written."""

    def flow(env, scenario) -> Outcome:
        outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
        creds = Credentials(env, str(env.tmp_factory.mktemp("credrot")))
        providers = _providers_with(env, creds.path)
        proxies = names("cr", 2)
        try:
            old, old_secret = creds.issue()
            creds.write(old)
            running(env, extra=NO_PROBES)
            env.controller.write_providers(providers)
            _in_use(env, outcome, providers)
            for name in proxies:
                env.create(name, {"provider": PROVIDER})
            wait_all(env, outcome, proxies, ready, "Ready before the rotation", 60)
            provider_ids = {n: (get(env, n).get("status") or {}).get("providerID") for n in proxies}
            outcome.calls.append("providerIDs: %s" % provider_ids)
            before = _failed_ops(env)
            if revoke_first:
                creds.revoke_and_wait(outcome, old_secret, old)
                time.sleep(8)  # two Running poll periods (3 s): each Proxy polled, answered 401
                outcome.calls.append(
                    "while revoked: %d failed %s operations; latched: %s"
                    % (_failed_ops(env) - before, PROVIDER, _latched([get(env, n) for n in proxies]))
                )
            new, _new_secret = creds.issue()
            creds.write(new)
            written = time.monotonic()
            if not revoke_first:
                creds.revoke_and_wait(outcome, old_secret, old)
                time.sleep(8)  # a few Running polls with the new token only
                written = time.monotonic()  # recovery: from the polls' end, not the sleep
            wait_all(env, outcome, proxies, ready, "Ready after the new token was written", 60)
            outcome.recovery_seconds = round(time.monotonic() - written, 2)
            outcome.calls.append("%d failed %s operations in all" % (_failed_ops(env) - before, PROVIDER))
            _check(env, outcome, proxies, provider_ids, [old, new])
            _finish(env, outcome, proxies)
        finally:
            try:
                _delete_leftovers(env, outcome, proxies)
                env.controller.write_providers(env.providers)
                _in_use(env, outcome, env.providers)
            finally:
                creds.close()
        return outcome

    return flow


SCENARIOS = [
    Scenario(
        "ctl-credentials-rotated",
        "a kubernetes provider's token rotated: the new kubeconfig swapped in, then the old token revoked",
        CONTROLLER,
        no_fault,
        rotated(revoke_first=False),
    ),
    Scenario(
        "ctl-credentials-revoked-before-rotation",
        "a kubernetes provider's token revoked (401 for ~8 s of polls), then the new kubeconfig swapped in",
        CONTROLLER,
        no_fault,
        rotated(revoke_first=True),
    ),
]
