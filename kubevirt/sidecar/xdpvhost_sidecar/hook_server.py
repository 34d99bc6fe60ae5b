"""The gRPC services virt-launcher calls on the sidecar's hook socket
(kubevirt/INTERFACES.md, KubeVirt hook sidecar API): kubevirt.hooks.info.Info
and kubevirt.hooks.v1alpha3.Callbacks."""

import dataclasses
import json
import logging
import threading

import grpc
from xdpvhost_dra import log_setup

from .binding_error import BindingError
from .domain_rewrite import rewrite
from .stubs import info_grpc, info_pb2, v1alpha3_grpc, v1alpha3_pb2
from .vhost_user_endpoint import resolve
from .vmi_interface import bound_interfaces

log = logging.getLogger("xdpvhost_sidecar")

SIDECAR_NAME = "xdpvhost-vhostuser-binding"
VERSION = "v1alpha3"


class InfoService(info_grpc.InfoServicer):
    def Info(self, request, context):
        return info_pb2.InfoResult(
            name=SIDECAR_NAME,
            versions=[VERSION],
            hookPoints=[info_pb2.HookPoint(name="OnDefineDomain", priority=0),
                        info_pb2.HookPoint(name="Shutdown", priority=0)])


class CallbacksService(v1alpha3_grpc.CallbacksServicer):
    def __init__(self, settings, stopping: threading.Event):
        self.settings = settings
        self.stopping = stopping

    def define_domain(self, domain_xml, vmi_json):
        try:
            vmi = json.loads(vmi_json or b"{}")
        except ValueError as e:
            raise BindingError(f"the VMI is not JSON: {e}") from e
        meta = vmi.get("metadata") or {}
        vm = f"{meta.get('namespace', '?')}/{meta.get('name', '?')}"
        with log_setup.context(namespace=str(meta.get("namespace") or ""), vm=str(meta.get("name") or "")):
            return self._define_domain(domain_xml, vmi, vm)

    def _define_domain(self, domain_xml, vmi, vm):
        interfaces = bound_interfaces(vmi, self.settings.binding_name)
        if not interfaces:
            log.info("%s: no interface uses binding %s; domain unchanged", vm,
                     self.settings.binding_name)
        bound = []
        for iface in interfaces:
            endpoint = resolve(iface.claim, self.settings.metadata_root,
                               self.settings.socket_root, self.settings.default_mtu,
                               self.settings.driver, self.settings.default_queues)
            if endpoint.queues is not None and endpoint.queues < iface.queues:
                # QEMU refuses a netdev that asks for more pairs than the backend has.
                log.warning("%s: interface %s: the VM's multiqueue NIC would have %d queue "
                            "pairs (one per vCPU), its port offers %d%s: it gets %d", vm,
                            iface.name, iface.queues, endpoint.queues,
                            "" if endpoint.from_metadata else
                            " as far as the sidecar knows (no device metadata: --default-queues)",
                            endpoint.queues)
                iface = dataclasses.replace(iface, queues=endpoint.queues)
            if endpoint.mac is not None:
                # The port lets the guest send from this MAC only: the NIC must have it.
                if iface.mac is not None and iface.mac != endpoint.mac:
                    raise BindingError(f"interface {iface.name}: macAddress {iface.mac}, but its "
                                       f"port was prepared with MAC {endpoint.mac} ({endpoint.origin}) "
                                       "and drops frames from any other")
                iface = dataclasses.replace(iface, mac=endpoint.mac)
            level = logging.INFO if endpoint.from_metadata else logging.WARNING
            log.log(level, "%s: interface %s (claim %s, request %s): vhost-user socket %s, "
                    "mtu %d, queues %d, mac %s, from %s", vm, iface.name, iface.claim.pod_claim_name,
                    iface.claim.request, endpoint.path, endpoint.mtu, iface.queues,
                    iface.mac or "chosen by libvirt", endpoint.origin)
            bound.append((iface, endpoint))
        xml, source = rewrite(domain_xml, bound)
        if source:
            log.info("%s: guest memory from %s, shared (the domain named no source: libvirt would "
                     "back it with a file, which xdpvhostd does not map)", vm, source)
        return xml

    def OnDefineDomain(self, request, context):
        try:
            xml = self.define_domain(request.domainXML, request.vmi)
        except BindingError as e:
            log.error("OnDefineDomain refused: %s", e)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return v1alpha3_pb2.OnDefineDomainResult(domainXML=xml)

    def PreCloudInitIso(self, request, context):
        return v1alpha3_pb2.PreCloudInitIsoResult(
            cloudInitNoCloudSource=request.cloudInitNoCloudSource,
            cloudInitData=request.cloudInitData)

    def Shutdown(self, request, context):
        log.info("Shutdown called: the VM's QEMU has exited; stopping")
        self.stopping.set()
        return v1alpha3_pb2.ShutdownResult()


def make_server(settings, stopping, workers=4):
    from concurrent import futures

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    info_grpc.add_InfoServicer_to_server(InfoService(), server)
    v1alpha3_grpc.add_CallbacksServicer_to_server(CallbacksService(settings, stopping), server)
    return server
