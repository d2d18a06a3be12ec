#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Collect NVIDIA GPU, driver, thermal and isolation facts in one pass
version_added: 1.0.0
description:
  - Gathers every GPU, driver/CUDA, thermal, health and isolation fact of a host in one module call and
    returns them as C(ansible_facts.gpufleet), in the versioned schema published in
    C(docs/schema/gpu_facts.schema.json).
  - GPU facts come from NVML through C(pynvml) (package C(nvidia-ml-py)) when it is importable, else from
    C(nvidia-smi -q -x). Host facts come from C(/proc), C(/sys), C(/etc), C(systemctl) and the kernel log.
  - A host without an NVIDIA stack is not a failure; O(source=auto) then returns C(nvidia_present=false) with an
    empty C(nvidia_evidence).
  - A host with NVIDIA hardware or software (C(nvidia_evidence)) whose GPU backends did not answer returns
    C(collection.status=failed) with the reasons; a collection that was cut short returns V(partial). The
    module itself still succeeds, so that the audit reports the host instead of losing it.
  - Kernel log events are bounded; the first and last 5 of each Xid and GPU are kept, the counts of all of them
    are in C(kernel_log).
  - Readings that cannot be true (negative temperatures, memory or counters, used memory above the total) are
    null with an entry in C(errors).
  - A query that fails (a GPU that fell off the bus, a call the GPU does not support, a hung command)
    sets that value to null and adds an entry to C(errors); the other values and GPUs are still returned.
  - Never uses a shell and changes nothing on the host. External commands are found on the remote C(PATH).
  - An action plugin runs the module and, on the controller, the audit's per-host steps (O(not_audited_msg),
    O(bmc_address), O(run_dir)), so that the audit needs one task per host; those options never reach the host.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - Python 3.9 or newer on the target.
  - C(nvidia-ml-py) on the target for O(source=nvml) (optional for O(source=auto)).
options:
  source:
    description:
      - Where GPU facts come from.
      - V(auto) tries NVML, then C(nvidia-smi -q -x), then reports that no NVIDIA stack was found.
      - V(nvml) and V(nvidia_smi) use only that backend.
      - V(replay) answers every NVML call, file and command from the fixture named in O(fixture), through the
        unmodified C(pynvml) code; a call that the fixture does not hold fails the module.
    type: str
    choices: [auto, nvml, nvidia_smi, replay]
    default: auto
  gather_subset:
    description:
      - Which parts to collect, as in M(ansible.builtin.setup).
      - V(all), V(min) (driver and GPU inventory), or any of V(driver), V(gpus), V(processes), V(mig), V(nvlink),
        V(host), V(kernel_log), V(driver_clients), V(workload), V(host_pressure), V(bmc), V(kubernetes), V(fabric);
        prefix a name with C(!) to leave it out.
      - V(driver_clients) looks through C(/proc/<pid>/maps) for processes that loaded NVIDIA driver libraries of
        another version than the kernel module (a container with its own driver libraries, a stale CUDA compat
        package); bounded to 4096 processes and 10 seconds, and it needs root to read other users' processes.
        A replay runs it only when the fixture recorded it.
      - V(workload) reports, for each unit of O(services) and each systemd service that owns a GPU process, its
        restarts and last exit (C(systemctl show)), the kernel OOM killer's kills in its cgroup (the kernel log, as
        O(kernel_log_source) says), counts and the first and last line of CUDA out-of-memory, NCCL, illegal
        memory access and Python traceback messages in its journal (C(journalctl -o json), the newest 20000
        entries of the last O(kernel_log_window_hours)), the frameworks its interpreter carries (PyTorch,
        TensorFlow, JAX with their CUDA runtime, cuDNN and NCCL; a probe that reads package metadata and imports
        nothing, run with the interpreter of C(ExecStart) as the service's user, within O(command_timeout)), and
        the CUDA_VISIBLE_DEVICES, PYTORCH_CUDA_ALLOC_CONF, CUDA_MPS_* and NCCL_* variables of each of its GPU
        processes (C(/proc/<pid>/environ); no other variable leaves the host). Reading other users' journals,
        environments and probing as another user need root (C(become)); without it each part says so in the facts.
      - V(host_pressure) samples CPU, memory and I/O pressure (C(/proc/pressure)), load per core, available memory
        and swap activity over O(pressure_sample_seconds), with GPU utilization from C(nvidia-smi) about once a
        second.
      - V(bmc) reads the host's BMC in-band through C(/dev/ipmi0) with C(ipmitool) (sensors from C(sdr elist), the
        event log of the last O(kernel_log_window_hours) from C(sel elist) with times in UTC, the BMC clock and the
        DCMI power reading). A host without an IPMI device reports C(bmc.status=no_device); one with the device but
        without C(ipmitool) or without the permission to open it (not root) reports an entry in C(errors).
        For a BMC read over the network from the controller see M(gpufleet.core.bmc_facts).
      - V(kubernetes) reads, on a Kubernetes node, the NVIDIA device plugin's sharing configuration (time slicing or
        MPS replicas, C(renameByDefault), C(failRequestsGreaterThanOne), the MIG strategy) from
        O(kubernetes_device_plugin_config) or, with O(kubernetes_kubectl), from O(kubernetes_configmap), and what the
        node advertises (C(nvidia.com/*) allocatable and capacity from C(kubectl get node), else the devices the
        plugin registered in the kubelet's checkpoint). A host that is no Kubernetes node reports C(kubernetes.node=false).
      - V(fabric) reads the InfiniBand / RoCE HCAs and ports from C(/sys/class/infiniband) (state, physical state,
        rate and width, link layer, firmware, every counter and hw_counter; C(ibstat), else C(ibv_devinfo -v), where
        that folder is missing), C(ethtool -S) of each RoCE port's netdev, GPUDirect RDMA readiness (nvidia_peermem
        in C(/proc/modules), dma-buf, the ACS control of the PCI bridges from C(lspci -nnvv), which needs root) and
        C(nvidia-smi topo -m). A program or folder that is not there leaves its part null (docs/fabric.md).
      - V(processes), V(mig), V(nvlink) and V(host_pressure) imply V(gpus); V(gpus) implies V(driver); V(workload)
        implies V(processes). A replay runs V(driver_clients), V(workload), V(host_pressure), V(bmc),
        V(kubernetes) and V(fabric) only when the fixture recorded them.
    type: list
    elements: str
    default: [all]
  timeout:
    description:
      - Seconds the whole collection may take, whatever the commands and NVML do. When it runs out, what was
        read so far is returned, the missing parts are listed in C(errors), C(collection.status) is V(partial)
        (or V(failed) when no GPU facts could be read) and C(collection.reasons) says what was cut.
      - A command still running then is killed with its whole process group; reading its output stops even
        when a child that left the group keeps the pipe open, and a process that cannot be killed (stuck in
        the kernel, as nvidia-smi on a GPU that fell off the bus) is left behind. Commands not yet started
        are not started. An NVML call that hangs is left behind in its thread.
    type: int
    default: 60
  command_timeout:
    description:
      - Seconds one external command (C(nvidia-smi), C(journalctl), C(systemctl), ...) may run before it and
        its process group are killed and it is reported in C(errors). Never more than what is left of O(timeout).
    type: int
    default: 20
  kernel_log_window_hours:
    description:
      - Only kernel log events from the last this many hours are returned. Events without a time are kept.
    type: int
    default: 72
  services:
    description:
      - Extra systemd units to report in C(host.services), in addition to nvidia-persistenced,
        nvidia-fabricmanager, the MPS control daemon and DCGM (for example the GPU workload services).
    type: list
    elements: str
    default: []
  pressure_sample_seconds:
    description:
      - Seconds over which V(host_pressure) samples pressure and GPU utilization (at most 60); shortened so that
        the collection ends within O(timeout). V(0) reads everything once (pressure then has only the kernel's
        averages).
    type: int
    default: 3
  kubernetes_device_plugin_config:
    description:
      - With the V(kubernetes) subset, NVIDIA device plugin config files (YAML or JSON, version v1) to read, the first
        that exists wins, before any ConfigMap.
    type: list
    elements: path
    default: [/etc/nvidia-device-plugin/config.yaml]
  kubernetes_kubectl:
    description:
      - With the V(kubernetes) subset, allow C(kubectl get node) and C(kubectl get configmap) (read only, each bounded
        by O(command_timeout) and a request timeout). Off by default, since many nodes have no credentials for it.
    type: bool
    default: false
  kubernetes_kubeconfig:
    description:
      - The kubeconfig for C(kubectl), for example C(/etc/kubernetes/kubelet.conf); unset, kubectl's own default.
    type: path
  kubernetes_configmap:
    description:
      - C(namespace/name) of the ConfigMap holding the device plugin config (the GPU Operator's
        C(devicePlugin.config.name)); the key is the node's C(nvidia.com/device-plugin.config) label, else the only key.
    type: str
  kubernetes_node_name:
    description:
      - The node's name in Kubernetes; unset, the host name in lower case.
    type: str
  record:
    description:
      - Write a fixture to this path on the target host with every raw NVML answer (errors as integer codes),
        every file read and every command output of this collection, for replay with O(source=replay).
      - Nothing is written in check mode.
    type: path
  scrub:
    description:
      - With O(record), replace GPU serial numbers and GPU/MIG UUIDs by consistent fake values.
    type: bool
    default: true
  fixture:
    description:
      - Fixture file to replay, on the target host. Required with O(source=replay).
    type: path
  capture:
    description:
      - 'Read a captured host instead of the live one (docs/offline.md), on the target (C(gpufleet analyze) runs
        it on the controller): a captured root (a folder laid out like the host, C(proc/), C(sys/), C(etc/),
        C(var/log/), with the outputs of commands under C(sos_commands/), as in a sosreport), this collection''s
        incident bundle (C(evidence/<host>/) or its C(.tar.gz)), or an C(nvidia-bug-report.log) or C(.log.gz).'
      - Every collector reads the capture through the same host access as a live host. The facts' clock is the
        capture's (its C(collected_at), from which the kernel log and service journal windows are counted), and
        C(inputs) says per gather subset which inputs were read, absent from the capture, or not supported.
      - GPU facts come from the captured C(nvidia-smi -q -x) (NVML cannot be captured), the kernel log from the
        capture's log files; nothing runs on the host. Only with O(source=auto) or O(source=nvidia_smi).
    type: path
    version_added: 1.5.0
  not_audited_msg:
    description:
      - Read on the controller by the action plugin, which then does not contact the host and returns it as not audited
        with this message (marked unreachable, as M(gpufleet.core.audit_verdict) does, so C(ansible-playbook) exits
        V(4) unless the task ignores unreachable hosts). The audit sets it when its policy check failed.
    type: str
  run_dir:
    description:
      - Read on the controller by the action plugin. When the collection succeeded, the host's facts are written
        there as C(facts/<host>.json) (compact JSON, keys sorted, mode 0640 less the umask; the name as
        M(gpufleet.core.audit_report) names it, among the play's hosts) as soon as the host's result arrives, and the
        result names the file in C(gpufleet_facts_file) (relative to O(run_dir)), so the report does not write it
        again. The folder must exist (the audit creates it before collecting).
      - With the file, the result carries C(gpufleet_store_extract), what the run store keeps of the host (the
        facts file zlib-compressed, in base64, and each GPU's cumulative error counters), made in the same worker
        so that the audit's store transaction only inserts. The audit ignores both keys when a host's module
        returns them itself.
    type: path
  policy:
    description:
      - Read on the controller by the action plugin. The host's effective policy, as M(gpufleet.core.policy_check)
        returns it. When the collection succeeded, the host's own rules run in its Ansible worker as its result
        arrives (the same rules, knowledge and policy M(gpufleet.core.audit_report) would use), and the result
        carries C(gpufleet_diagnosis), one JSON text of the policy's digest, the host's findings, what the fleet-wide
        rules and the run store read of its facts, and its summary line, so that the report neither holds nor reads
        the host's facts. The report diagnoses the host again from its facts when the digest is not that of the host's policy
        in its own run. The audit sets it.
    type: dict
  keep_facts:
    description:
      - Read on the controller by the action plugin. With V(false), once the host's facts file is written (see
        O(run_dir)) the result no longer carries the facts (C(ansible_facts.gpufleet) is not set and the
        registered result holds C(gpufleet_facts_file) and C(gpufleet_store_extract) in their place), so that
        C(ansible-playbook) does not hold every host's facts until the play ends; M(gpufleet.core.audit_report)
        reads them from the file. Without a written facts file the facts stay in the result.
      - C(audit.yml) sets it to V(false) unless the play sets C(gpufleet_keep_facts=true); C(remediate.yml),
        C(incident.yml) and C(loadstep.yml), whose later tasks read the facts, keep them.
    type: bool
    default: true
  validation:
    description:
      - Read on the controller by the action plugin. The host's active checks, the C(validation) that
        M(gpufleet.core.gpu_validate) returned for it, become the facts' C(validation) family before the facts are
        checked and the host diagnosed, so that one audit judges them with everything else (C(validate.yml)).
      - Ignored for a host whose collection failed.
    type: dict
extends_documentation_fragment:
  - gpufleet.core.kernel_log
  - gpufleet.core.bmc_connection.inventory
  - gpufleet.core.attributes
  - gpufleet.core.attributes.facts
  - gpufleet.core.attributes.platform
attributes:
  check_mode:
    support: full
    details: Can run in check mode and return the same facts; O(record) writes nothing then.
  diff_mode:
    support: none
  facts:
    support: full
    details: Under C(ansible_facts.gpufleet).
  platform:
    platforms: linux
notes:
  - Facts are returned under C(ansible_facts.gpufleet); the schema version is in C(gpufleet.schema_version).
  - Reading the kernel log may need root (C(become)) on hosts that restrict C(dmesg).
seealso:
  - name: NVML API reference
    description: The library behind the NVML backend.
    link: https://docs.nvidia.com/deploy/nvml-api/
"""

EXAMPLES = r"""
- name: Collect GPU facts
  gpufleet.core.gpu_facts:

- name: Only the driver and GPU inventory, from nvidia-smi
  gpufleet.core.gpu_facts:
    source: nvidia_smi
    gather_subset: [min]

- name: Everything but the kernel log, with the inference services' state
  gpufleet.core.gpu_facts:
    gather_subset: ['all', '!kernel_log']
    services: [triton-server]

- name: The GPU services' failures and frameworks, and host pressure over 5 seconds
  gpufleet.core.gpu_facts:
    gather_subset: [workload, host_pressure]
    services: [vllm]
    pressure_sample_seconds: 5
  become: true

- name: Record a fixture on a real GPU host (read only; serials and UUIDs scrubbed)
  gpufleet.core.gpu_facts:
    record: /tmp/gpu-fixture.json
  become: true

- name: BMC sensors and event log, and the device plugin's sharing through kubectl
  gpufleet.core.gpu_facts:
    gather_subset: [min, bmc, kubernetes]
    kubernetes_kubectl: true
    kubernetes_kubeconfig: /etc/kubernetes/kubelet.conf
    kubernetes_configmap: gpu-operator/time-slicing-config
  become: true

- name: Replay a recorded fixture anywhere
  gpufleet.core.gpu_facts:
    source: replay
    fixture: /srv/fixtures/h100-node.json

- name: Show each GPU
  ansible.builtin.debug:
    msg: "{{ item.index }} {{ item.name }} {{ item.pci_bus_id }} {{ item.memory.total_mib }} MiB"
  loop: "{{ ansible_facts.gpufleet.gpus }}"
"""

# BEGIN GENERATED RETURN (tools/schema_to_return.py from docs/schema/gpu_facts.schema.json)
RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpufleet:
      description: 'Facts returned by gpufleet.core.gpu_facts. Schema version 1.x: fields are only added within
        a major version. A value that the backend could not read is null, never invented; the reason is in errors[].
        1.1 added nvidia_evidence, collection, kernel_log (bounded kernel-log events with counts), driver_clients
        and kernel_events[].client_process and client_pid. 1.2 added workload and host_pressure, bmc (BMC sensors
        and event log) and kubernetes (device plugin sharing and node resources). 1.3 added kernel_log.unplaced_lines
        and clock_offset_s. 1.4 added gpus[].recovery_action, sxid_events (NVSwitch errors), kernel_log groups of
        kind sxid, and xid_events[].gpc, tpc and sm. 1.5 added bmc.leak_detectors, bmc.fans[].no_reading, bmc.power_supplies[].offline
        and bmc.sel.open_before_window; the host''s own kernel messages to kernel_events (kinds pcie_aer, pcie_aer_unrecovered,
        pcie_link_limited, memory_error, machine_check, hung_task, soft_lockup, kernel_panic, init_failed, gsp_rpc_rate_limited,
        segfault, with their fields), kernel_log.oom_kills (every OOM kill of the window, named or not, with the
        pod, container or unit its cgroup names), host_pressure.vmstat_since_boot and the avg300 averages of pressure;
        workload journal kinds (framework out-of-memory of every framework, CUDA runtime errors, cuDNN mismatches,
        NCCL failures by cause) and details (what those messages say in numbers); kubernetes.device_health (the
        device plugin''s log: devices marked unhealthy, pods rejected at admission); inputs (what the collection
        read, found absent or could not read, per gather subset) and capture (the captured host read instead of
        the live one). 1.6 added validation (active diagnostics, from gpufleet.core.gpu_validate) and fabric (InfiniBand
        / RoCE HCAs and ports, GPUDirect RDMA readiness, nvidia-smi topo -m).'
      returned: always
      type: dict
      contains:
        schema_version:
          description: Version of this schema, MAJOR.MINOR.
          returned: success
          type: str
        source:
          description: 'Backend that produced the GPU facts; none when no NVIDIA stack answered. One of: nvml, nvidia_smi,
            replay, none.'
          returned: success
          type: str
        replay_of:
          description: For source=replay, the backend recorded in the fixture (nvml or nvidia_smi).
          returned: success
          type: str
        collected_at:
          description: UTC time the collection started, ISO 8601.
          returned: success
          type: str
        collection_seconds:
          description: Wall time of the whole collection.
          returned: success
          type: float
        clock_offset_s:
          description: 'The host''s clock minus the controller''s, in seconds (negative: the host is behind), measured
            by the controller''s gpu_facts action from collected_at and the times it sent the module and got its
            answer: 0 when collected_at falls between them, else its distance from them, so the transfer time never
            counts against the host. Absent or null when not measured (facts replayed from a fixture). The audit
            reports an offset beyond thresholds.clock_offset_s (driver.clock_offset) and counts the Xid window in
            the host''s clock. Added in 1.3.'
          returned: success
          type: int
        capture:
          description: The captured host these facts were read from (gpu_facts capture, gpufleet analyze; docs/offline.md);
            absent for a live host. collected_at is then the capture's clock. Added in 1.5.
          returned: always
          type: dict
          contains:
            kind:
              description: 'root: a folder laid out like the host with sos_commands/; incident_bundle: this collection''s
                evidence bundle; nvidia_bug_report: an nvidia-bug-report.log(.gz). One of: root, incident_bundle,
                nvidia_bug_report.'
              returned: success
              type: str
            path:
              description: The capture's path where it was read.
              returned: success
              type: str
            clock_source:
              description: 'Where the capture''s clock (collected_at) comes from: capture.json, the captured date,
                the bundle''s host_clock, the report''s Date line.'
              returned: success
              type: str
            kernel_log_files:
              description: The capture's files read as the kernel log.
              returned: always
              type: list
              elements: str
            lacks:
              description: What this kind of capture never holds (its inputs are then absent or not supported).
              returned: always
              type: list
              elements: str
        inputs:
          description: 'Per step of the collection that ran (a gather subset; driver covers gpus, processes, mig
            and nvlink): what it read. A clean report of a host whose inputs were absent is not a clean host. Absent
            from facts of collections before 1.5. Added in 1.5.'
          returned: always
          type: list
          elements: dict
          contains:
            input:
              description: 'The step (gather subset). One of: driver, host, kernel_log, driver_clients, workload,
                host_pressure, bmc, kubernetes, fabric.'
              returned: success
              type: str
            status:
              description: 'read: at least one source answered; failed: a source was there but could not be read
                (errors says why); not_supported: none can be read here (NVML or a live probe from a capture); absent:
                no source was there (not on the host, not in the capture). One of: read, failed, not_supported,
                absent.'
              returned: success
              type: str
            sources_read:
              description: How many of the files, folders and commands the step asked for answered.
              returned: success
              type: int
            sources:
              description: Each file, folder or command the step asked for that did not answer (absent, failed or
                not supported), at most 20; a process's /proc entry as /proc/<pid>/, a GPU's sysfs folder as /sys/bus/pci/devices/<bus
                id>/.
              returned: always
              type: list
              elements: dict
              contains:
                source:
                  description: A path, a command line without its time window, or NVML.
                  returned: success
                  type: str
                status:
                  description: 'As the step''s status, for this source. One of: failed, not_supported, absent.'
                  returned: success
                  type: str
            sources_left_out:
              description: Sources not read beyond the 20 listed.
              returned: success
              type: int
        gather_subset:
          description: Subsets actually collected.
          returned: always
          type: list
          elements: str
        nvidia_present:
          description: 'True when NVML or nvidia-smi answered (or reported a driver/library mismatch). False when
            neither answered: with nvidia_evidence empty the host has no NVIDIA stack (a fact, not a failure); with
            evidence, collection.status is failed and says why.'
          returned: success
          type: bool
        nvidia_evidence:
          description: 'Signs of NVIDIA hardware or software read without NVML or nvidia-smi (only with the driver
            subset): PCI functions of vendor 0x10de in sysfs, the nvidia kernel module, /proc/driver/nvidia/version,
            nvidia-smi on PATH, libnvidia-ml. Empty on a host that really has no NVIDIA stack. Added in 1.1.'
          returned: always
          type: list
          elements: dict
          contains:
            kind:
              description: 'pci_device: a PCI function of vendor 0x10de (at most 64 are listed); kernel_module:
                the nvidia module is loaded; proc_driver: /proc/driver/nvidia/version exists; binary: nvidia-smi
                is on PATH; library: libnvidia-ml.so.1 is installed. One of: pci_device, kernel_module, proc_driver,
                binary, library.'
              returned: success
              type: str
            path:
              description: 'Where it was seen: the sysfs folder, file or program path.'
              returned: success
              type: str
            detail:
              description: PCI class, the first line of the driver version file, or the program name.
              returned: success
              type: str
        collection:
          description: Whether this collection read what it was asked for. Added in 1.1.
          returned: always
          type: dict
          contains:
            status:
              description: 'complete: everything asked for was read (on a host without an NVIDIA stack, that there
                is none). partial: a backend answered but some of it could not be read: the collection timeout was
                reached, a command was killed at its timeout, NVML stopped answering or could not count the GPUs
                or open one that is not lost, nvidia-smi printed a partial report or listed fewer GPUs than it says
                are attached (attached_gpus), or the kernel log could not be read on an NVIDIA host. failed: NVIDIA
                hardware or software is present (nvidia_evidence) or a driver/library mismatch was seen, but no
                GPU facts could be read. One of: complete, partial, failed.'
              returned: success
              type: str
            reasons:
              description: What could not be read and why, one line each (at most 500 characters); empty when complete.
              returned: always
              type: list
              elements: str
        driver:
          description: Driver, NVML and CUDA versions of the host, and whether the kernel module and userspace library
            agree.
          returned: always
          type: dict
          contains:
            version:
              description: Driver version reported by NVML or nvidia-smi.
              returned: success
              type: str
            nvml_version:
              description: NVML library version.
              returned: success
              type: str
            cuda_driver_version:
              description: Highest CUDA version the driver supports, MAJOR.MINOR.
              returned: success
              type: str
            kernel_module_version:
              description: From /proc/driver/nvidia/version.
              returned: success
              type: str
            userspace_version:
              description: Version of the userspace library (libnvidia-ml / nvidia-smi).
              returned: success
              type: str
            mismatch:
              description: True when the kernel module and userspace library differ.
              returned: success
              type: bool
            mismatch_reason:
              description: What showed the mismatch.
              returned: success
              type: str
        gpus:
          description: One entry per GPU, in NVML/nvidia-smi index order.
          returned: always
          type: list
          elements: dict
          contains:
            index:
              description: NVML/nvidia-smi index.
              returned: success
              type: int
            name:
              description: Product name, e.g. NVIDIA H100 80GB HBM3.
              returned: success
              type: str
            uuid:
              description: GPU UUID (GPU-...).
              returned: success
              type: str
            serial:
              description: Board serial number.
              returned: success
              type: str
            pci_bus_id:
              description: Normalised as DDDD:BB:DD.F, lower case.
              returned: success
              type: str
            board_part_number:
              description: Board part number.
              returned: success
              type: str
            vbios_version:
              description: VBIOS version.
              returned: success
              type: str
            architecture:
              description: Lower-case architecture name, e.g. hopper.
              returned: success
              type: str
            compute_capability:
              description: MAJOR.MINOR.
              returned: success
              type: str
            lost:
              description: True when the GPU answered NVML_ERROR_GPU_IS_LOST or nvidia-smi reported it unavailable.
              returned: success
              type: bool
            memory:
              description: Frame buffer memory in MiB (total, used, free, reserved) and BAR1 total/used.
              returned: always
              type: dict
              contains:
                total_mib:
                  description: Total frame buffer.
                  returned: success
                  type: int
                used_mib:
                  description: Used.
                  returned: success
                  type: int
                free_mib:
                  description: Free.
                  returned: success
                  type: int
                reserved_mib:
                  description: Reserved by the driver.
                  returned: success
                  type: int
                bar1_total_mib:
                  description: BAR1 total.
                  returned: success
                  type: int
                bar1_used_mib:
                  description: BAR1 used.
                  returned: success
                  type: int
            temperature:
              description: 'Degrees C: GPU core, slowdown and shutdown thresholds, memory (HBM).'
              returned: always
              type: dict
              contains:
                gpu_c:
                  description: GPU core temperature.
                  returned: success
                  type: int
                slowdown_c:
                  description: Slowdown threshold.
                  returned: success
                  type: int
                shutdown_c:
                  description: Shutdown threshold.
                  returned: success
                  type: int
                memory_c:
                  description: Memory temperature.
                  returned: success
                  type: int
            power:
              description: 'Watts: draw, enforced limit, default limit, min/max settable limits.'
              returned: always
              type: dict
              contains:
                draw_w:
                  description: Current draw.
                  returned: success
                  type: float
                limit_w:
                  description: Enforced power limit.
                  returned: success
                  type: float
                default_limit_w:
                  description: Default power limit.
                  returned: success
                  type: float
                min_limit_w:
                  description: Lowest settable limit.
                  returned: success
                  type: float
                max_limit_w:
                  description: Highest settable limit.
                  returned: success
                  type: float
            fan_speed_pct:
              description: Fan speed in percent; null on passively cooled boards.
              returned: success
              type: int
            clocks:
              description: Current and maximum graphics, SM and memory clocks in MHz.
              returned: always
              type: dict
              contains:
                graphics_mhz:
                  description: Graphics clock.
                  returned: success
                  type: int
                sm_mhz:
                  description: SM clock.
                  returned: success
                  type: int
                memory_mhz:
                  description: Memory clock.
                  returned: success
                  type: int
                max_graphics_mhz:
                  description: Max graphics clock.
                  returned: success
                  type: int
                max_sm_mhz:
                  description: Max SM clock.
                  returned: success
                  type: int
                max_memory_mhz:
                  description: Max memory clock.
                  returned: success
                  type: int
            clock_event_reasons:
              description: Active clock event (throttle) reasons as a bit mask and decoded names.
              returned: always
              type: dict
              contains:
                mask:
                  description: NVML clocks event reason bit mask.
                  returned: success
                  type: int
                active:
                  description: 'Decoded names: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown,
                    sync_boost, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, display_clock_setting,
                    ...'
                  returned: always
                  type: list
                  elements: str
            performance_state:
              description: P0..P15.
              returned: success
              type: str
            utilization:
              description: GPU and memory utilization in percent.
              returned: always
              type: dict
              contains:
                gpu_pct:
                  description: GPU utilization.
                  returned: success
                  type: int
                memory_pct:
                  description: Memory controller utilization.
                  returned: success
                  type: int
            ecc:
              description: 'ECC mode (current, pending after reset) and error counts: volatile (since boot) and
                aggregate (lifetime), corrected and uncorrected.'
              returned: always
              type: dict
              contains:
                mode_current:
                  description: ECC enabled now.
                  returned: success
                  type: bool
                mode_pending:
                  description: ECC mode after the next reset.
                  returned: success
                  type: bool
                volatile_corrected:
                  description: Corrected errors since boot.
                  returned: success
                  type: int
                volatile_uncorrected:
                  description: Uncorrected errors since boot.
                  returned: success
                  type: int
                aggregate_corrected:
                  description: Corrected errors, lifetime.
                  returned: success
                  type: int
                aggregate_uncorrected:
                  description: Uncorrected errors, lifetime.
                  returned: success
                  type: int
            retired_pages:
              description: 'Retired memory pages (pre-Ampere): single-bit and double-bit counts, and whether a retirement
                is pending a reset.'
              returned: always
              type: dict
              contains:
                single_bit:
                  description: Pages retired for multiple single-bit errors.
                  returned: success
                  type: int
                double_bit:
                  description: Pages retired for double-bit errors.
                  returned: success
                  type: int
                pending:
                  description: A retirement waits for a reset.
                  returned: success
                  type: bool
            remapped_rows:
              description: 'Row remapping (Ampere and newer): correctable and uncorrectable remaps, pending (needs
                a reset), failure (needs repair).'
              returned: always
              type: dict
              contains:
                correctable:
                  description: Rows remapped for correctable errors.
                  returned: success
                  type: int
                uncorrectable:
                  description: Rows remapped for uncorrectable errors.
                  returned: success
                  type: int
                pending:
                  description: A remap waits for a reset.
                  returned: success
                  type: bool
                failure:
                  description: 'Remapping failed: the GPU needs repair.'
                  returned: success
                  type: bool
            pcie:
              description: PCIe link generation and width (current and maximum), replay counter and AER counters.
              returned: always
              type: dict
              contains:
                gen_current:
                  description: Current link generation.
                  returned: success
                  type: int
                gen_max:
                  description: Maximum link generation of the GPU and host.
                  returned: success
                  type: int
                width_current:
                  description: Current link width (lanes).
                  returned: success
                  type: int
                width_max:
                  description: Maximum link width.
                  returned: success
                  type: int
                replay_counter:
                  description: PCIe replay counter.
                  returned: success
                  type: int
                aer:
                  description: PCIe AER counters from /sys/bus/pci/devices/<bus id>/aer_dev_*; totals per class
                    and each named counter.
                  returned: always
                  type: dict
                  contains:
                    correctable:
                      description: Total correctable errors.
                      returned: success
                      type: int
                    nonfatal:
                      description: Total non-fatal uncorrectable errors.
                      returned: success
                      type: int
                    fatal:
                      description: Total fatal errors.
                      returned: success
                      type: int
                    counters:
                      description: Each named AER counter.
                      returned: always
                      type: dict
            nvlinks:
              description: NVLink links with state and error counters; empty when the GPU has none.
              returned: always
              type: list
              elements: dict
              contains:
                link:
                  description: Link number.
                  returned: success
                  type: int
                active:
                  description: Link is up.
                  returned: success
                  type: bool
                errors:
                  description: 'Error counters: replay, recovery, CRC flit, CRC data.'
                  returned: always
                  type: dict
                  contains:
                    replay:
                      description: Replay errors.
                      returned: success
                      type: int
                    recovery:
                      description: Recovery errors.
                      returned: success
                      type: int
                    crc_flit:
                      description: CRC flit errors.
                      returned: success
                      type: int
                    crc_data:
                      description: CRC data errors.
                      returned: success
                      type: int
            compute_mode:
              description: 'Compute mode. One of: default, exclusive_thread, prohibited, exclusive_process, null.'
              returned: success
              type: str
            persistence_mode:
              description: Persistence mode enabled.
              returned: success
              type: bool
            mig:
              description: MIG mode current and pending, and the MIG layout.
              returned: always
              type: dict
              contains:
                mode_current:
                  description: null when the GPU does not support MIG.
                  returned: success
                  type: bool
                mode_pending:
                  description: MIG mode after the next GPU reset; differs from mode_current while a change is pending.
                  returned: success
                  type: bool
                gpu_instances:
                  description: GPU instances with their compute instances.
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    id:
                      description: GPU instance id.
                      returned: success
                      type: int
                    profile_id:
                      description: GPU instance profile id.
                      returned: success
                      type: int
                    profile_name:
                      description: Profile name, e.g. 3g.40gb.
                      returned: success
                      type: str
                    placement:
                      description: Memory slice placement.
                      returned: always
                      type: dict
                      contains:
                        start:
                          description: First slice.
                          returned: success
                          type: int
                        size:
                          description: Number of slices.
                          returned: success
                          type: int
                    memory_mib:
                      description: Memory of the instance.
                      returned: success
                      type: int
                    compute_instances:
                      description: Compute instances in this GPU instance.
                      returned: always
                      type: list
                      elements: dict
                      contains:
                        id:
                          description: Compute instance id.
                          returned: success
                          type: int
                        profile_id:
                          description: Compute instance profile id.
                          returned: success
                          type: int
                        profile_name:
                          description: Profile name, e.g. 3g.40gb.
                          returned: success
                          type: str
                        placement:
                          description: Placement inside the GPU instance.
                          returned: always
                          type: dict
                          contains:
                            start:
                              description: First slice.
                              returned: success
                              type: int
                            size:
                              description: Number of slices.
                              returned: success
                              type: int
            processes:
              description: Compute processes on the GPU.
              returned: always
              type: list
              elements: dict
              contains:
                pid:
                  description: Process id.
                  returned: success
                  type: int
                name:
                  description: Process name.
                  returned: success
                  type: str
                type:
                  description: 'Process type. One of: compute, graphics, compute+graphics, null.'
                  returned: success
                  type: str
                used_memory_mib:
                  description: GPU memory used by the process.
                  returned: success
                  type: int
                gpu_instance_id:
                  description: MIG GPU instance, or null.
                  returned: success
                  type: int
                compute_instance_id:
                  description: MIG compute instance, or null.
                  returned: success
                  type: int
            fabric:
              description: NVLink fabric (NVSwitch / GB200) registration state; null when the GPU has no fabric.
              returned: always
              type: dict
              contains:
                state:
                  description: not_started, in_progress, completed, not_supported.
                  returned: success
                  type: str
                status:
                  description: success or the NVML error name.
                  returned: success
                  type: str
                clique_id:
                  description: Fabric clique id.
                  returned: success
                  type: int
                cluster_uuid:
                  description: Fabric cluster UUID.
                  returned: success
                  type: str
            recovery_action:
              description: 'The recovery the driver asks for, from nvidia-smi''s gpu_recovery_action or NVML''s
                GPU recovery action field of newer drivers: none, gpu_reset, node_reboot, drain_p2p, drain_and_reset
                or recover_imex_domain (NVML values 0-5). Another value is kept as reported (nvidia-smi''s words
                in lower case with underscores, or nvml_<value>) so the audit can name it. Null when the driver
                or pynvml does not report it. Added in 1.4.'
              returned: success
              type: str
        host:
          description: 'Host facts: kernel, OS, GPU services, CUDA toolkits, container runtime.'
          returned: always
          type: dict
          contains:
            hostname:
              description: Host name.
              returned: success
              type: str
            kernel:
              description: Kernel release.
              returned: success
              type: str
            os:
              description: From /etc/os-release.
              returned: always
              type: dict
              contains:
                id:
                  description: ID from os-release.
                  returned: success
                  type: str
                version_id:
                  description: VERSION_ID.
                  returned: success
                  type: str
                pretty_name:
                  description: PRETTY_NAME.
                  returned: success
                  type: str
            services:
              description: 'Keyed by the role of the service: persistenced, fabricmanager, mps, dcgm, plus any extra
                services asked for.'
              returned: always
              type: dict
            mps_daemon_running:
              description: An nvidia-cuda-mps-control process is running (with or without a unit).
              returned: success
              type: bool
            cuda_toolkits:
              description: Installed CUDA toolkits (/usr/local/cuda-*).
              returned: always
              type: list
              elements: dict
              contains:
                path:
                  description: Toolkit folder.
                  returned: success
                  type: str
                version:
                  description: Toolkit version, e.g. 12.4.131.
                  returned: success
                  type: str
            container_toolkit:
              description: NVIDIA container toolkit version and runtime configuration of docker and containerd.
              returned: always
              type: dict
              contains:
                version:
                  description: nvidia-container-toolkit version.
                  returned: success
                  type: str
                docker_nvidia_runtime:
                  description: docker daemon.json defines an nvidia runtime.
                  returned: success
                  type: bool
                docker_default_runtime:
                  description: docker default-runtime.
                  returned: success
                  type: str
                containerd_nvidia_runtime:
                  description: containerd config defines an nvidia runtime.
                  returned: success
                  type: bool
        xid_events:
          description: 'NVRM Xid lines from the kernel log within kernel_log_window_hours: the first 5 and the last
            5 of each Xid and GPU, in log order (since 1.1; counts of all of them are in kernel_log.groups). Only
            lines whose message field starts with NVRM count, from the kernel: text of other senders or quoted later
            in a message is not an event. Control characters in the text are written as \xNN.'
          returned: always
          type: list
          elements: dict
          contains:
            xid:
              description: Xid number.
              returned: success
              type: int
            pci_bus_id:
              description: Normalised DDDD:BB:DD.0 to match gpus[].pci_bus_id.
              returned: success
              type: str
            time:
              description: ISO 8601 when the log gave a full time; the raw timestamp otherwise.
              returned: success
              type: str
            pid:
              description: Process id, null when unknown.
              returned: success
              type: int
            process_name:
              description: Process name, null when unknown.
              returned: success
              type: str
            gpu_instance_id:
              description: MIG GPU instance (GPU-I).
              returned: success
              type: int
            compute_instance_id:
              description: MIG compute instance (GPU-CI).
              returned: success
              type: int
            message:
              description: Rest of the line.
              returned: success
              type: str
            gpc:
              description: 'Xid 13 and 31 only: the GPC (graphics processing cluster) the message names, null when
                it names none; absent for other Xids. Added in 1.4.'
              returned: success
              type: int
            tpc:
              description: 'Xid 13 and 31 only: the TPC (texture processing cluster) within the GPC the message
                names, null when it names none; absent for other Xids. Added in 1.4.'
              returned: success
              type: int
            sm:
              description: 'Xid 13 and 31 only: the SM (streaming multiprocessor) within the TPC the message names,
                null when it names none; absent for other Xids. Added in 1.4.'
              returned: success
              type: int
        kernel_events:
          description: 'Other kernel log events: NVIDIA''s (GPU fallen off the bus without an Xid line, API (driver/library)
            mismatch, GPU initialisation failed) and, since 1.5, the host''s (PCIe AER errors and limited links,
            machine checks and memory errors, hung tasks, soft lockups, kernel panics, crashes in GPU libraries).
            The first 5 and the last 5 of each kind and device, in log order (since 1.1; counts in kernel_log.groups).'
          returned: always
          type: list
          elements: dict
          contains:
            kind:
              description: 'Event kind: fallen_off_bus and api_mismatch (NVRM); since 1.5 also init_failed (NVRM:
                RmInitAdapter failed), gsp_rpc_rate_limited (NVRM: Rate limiting GSP RPC error prints for GPU at
                PCI:...), pcie_aer (a ''PCIe Bus Error'' line with its error names), pcie_aer_unrecovered (a driver
                that cannot recover from an AER error), pcie_link_limited (the kernel''s ''available PCIe bandwidth,
                limited by''), memory_error (EDAC CE/UE), machine_check (''mce: [Hardware Error]''), hung_task,
                soft_lockup, kernel_panic and segfault (a process crashed inside an NVIDIA or CUDA library). One
                of: fallen_off_bus, api_mismatch, pcie_aer, pcie_aer_unrecovered, pcie_link_limited, memory_error,
                machine_check, hung_task, soft_lockup, kernel_panic, init_failed, segfault, gsp_rpc_rate_limited.'
              returned: success
              type: str
            time:
              description: ISO 8601 or the raw timestamp.
              returned: success
              type: str
            pci_bus_id:
              description: The device the message names (the GPU, or for PCIe events the reporting port or device);
                null when it names none.
              returned: success
              type: str
            client_version:
              description: Userspace version in an API mismatch.
              returned: success
              type: str
            kernel_module_version:
              description: Kernel module version in an API mismatch.
              returned: success
              type: str
            message:
              description: The message, continuation lines joined.
              returned: success
              type: str
            client_process:
              description: In an API mismatch from drivers 575 and later, the client's process name (printable characters
                only).
              returned: success
              type: str
            client_pid:
              description: In an API mismatch from drivers 575 and later, the client's process id.
              returned: success
              type: int
            aer_severity:
              description: 'pcie_aer: corrected, non_fatal or fatal (the kernel''s severity=). Added in 1.5.'
              returned: success
              type: str
            aer_type:
              description: 'pcie_aer: the layer the kernel names (Physical Layer, Data Link Layer, Transaction Layer).
                Added in 1.5.'
              returned: success
              type: str
            aer_errors:
              description: 'pcie_aer: the error names of the ''[NN] Name'' lines after it (at most 16), e.g. BadTLP,
                CmpltTO. Added in 1.5.'
              returned: always
              type: list
              elements: str
            multiple:
              description: 'pcie_aer: the kernel said it coalesced several errors (''AER: Multiple ... error received''
                next to it). Added in 1.5.'
              returned: success
              type: bool
            driver:
              description: 'pcie_aer_unrecovered: the driver of the device (nvidia, xhci_hcd, ...). Added in 1.5.'
              returned: success
              type: str
            available_gbps:
              description: 'pcie_link_limited: bandwidth available to the device, Gb/s. Added in 1.5.'
              returned: success
              type: float
            capable_gbps:
              description: 'pcie_link_limited: bandwidth the device is capable of, Gb/s. Added in 1.5.'
              returned: success
              type: float
            limited_by:
              description: 'pcie_link_limited: the limiting link, e.g. ''8.0 GT/s PCIe x1''. Added in 1.5.'
              returned: success
              type: str
            limiting_pci_bus_id:
              description: 'pcie_link_limited: the device at which the link is limited. Added in 1.5.'
              returned: success
              type: str
            full_link:
              description: 'pcie_link_limited: the link the device is capable of, e.g. ''8.0 GT/s PCIe x16''. Added
                in 1.5.'
              returned: success
              type: str
            process:
              description: 'hung_task, soft_lockup, segfault: the task''s name (printable, at most 64 characters).
                Added in 1.5.'
              returned: success
              type: str
            pid:
              description: 'hung_task, soft_lockup, segfault: the task''s pid. Added in 1.5.'
              returned: success
              type: int
            seconds:
              description: 'hung_task: blocked for more than this; soft_lockup: stuck for this. Added in 1.5.'
              returned: success
              type: int
            nvidia_stack:
              description: 'hung_task: the NVIDIA modules (nvidia, nvidia_uvm, ...) are in the task''s stack. Added
                in 1.5.'
              returned: success
              type: bool
            cpu:
              description: 'soft_lockup: the CPU that was stuck. Added in 1.5.'
              returned: success
              type: int
            corrected:
              description: 'memory_error, machine_check: true for corrected errors, false for uncorrected, null
                when the line does not say (''Machine check events logged''). Added in 1.5.'
              returned: success
              type: bool
            count:
              description: 'memory_error: the errors this line reports. Added in 1.5.'
              returned: success
              type: int
            location:
              description: 'memory_error: where, as EDAC names it (the DIMM or channel). Added in 1.5.'
              returned: success
              type: str
            reason:
              description: 'kernel_panic: the text after ''not syncing:''. Added in 1.5.'
              returned: success
              type: str
            code:
              description: 'init_failed: the driver''s code in ''RmInitAdapter failed! (code)''. Added in 1.5.'
              returned: success
              type: str
            library:
              description: 'segfault: the library the process crashed in. Added in 1.5.'
              returned: success
              type: str
        sxid_events:
          description: 'NVSwitch errors (SXid lines of the nvidia-nvswitch driver: ''nvidia-nvswitchN: SXid (PCI:...):
            NNNNN, ...'') from the kernel log within kernel_log_window_hours, the lines the driver prints for one
            error joined into one event: the first 5 and the last 5 of each SXid and switch, in log order (counts
            in kernel_log.groups, kind sxid). Present when the kernel log was read. Added in 1.4.'
          returned: always
          type: list
          elements: dict
          contains:
            sxid:
              description: SXid number (the Fabric Manager user guide's NVSwitch error number).
              returned: success
              type: int
            device:
              description: The switch device as the driver names it, e.g. nvidia-nvswitch3.
              returned: success
              type: str
            pci_bus_id:
              description: The NVSwitch's PCI address, normalised DDDD:BB:DD.F; null when the line names none (or
                a placeholder).
              returned: success
              type: str
            time:
              description: ISO 8601 or the raw timestamp, as in xid_events.
              returned: success
              type: str
            fatal:
              description: true for 'Fatal', false for 'Non-fatal' as the line says; null when no line of the error
                says either.
              returned: success
              type: bool
            link:
              description: The switch port (Link N) the line names, null when none.
              returned: success
              type: int
            data:
              description: The Data {...} words of the error, null when not logged.
              returned: success
              type: str
            message:
              description: The text after the SXid number; a following ', Severity ...' line of the same error is
                joined with '; '.
              returned: success
              type: str
        kernel_log:
          description: 'How the kernel log was read and how its events were bounded (with the kernel_log subset;
            added in 1.1). Events are grouped per Xid and GPU (xid_event) and per kind and GPU (kernel_event). Of
            each group the first 5 and the last 5 events are kept whole in xid_events / kernel_events; the others
            are only counted: groups[].count is the exact number of events of the group in the collection window,
            groups[].dropped counts the events that were not kept, by hour, so a shorter window on the controller
            can still count them. At most 64 Xid groups and 32 kernel-event groups are made; events of further groups
            are only counted in ungrouped. Whenever events were dropped or ungrouped an entry in errors (call ''kernel
            log'') says so.'
          returned: always
          type: dict
          contains:
            source:
              description: 'What was read; none when no source could be read. One of: journalctl, dmesg, files,
                none.'
              returned: success
              type: str
            events:
              description: Events found in the window, kept or not.
              returned: success
              type: int
            kept:
              description: Events kept whole in xid_events, kernel_events and sxid_events.
              returned: success
              type: int
            dropped:
              description: Events of a group that were only counted (groups[].dropped).
              returned: success
              type: int
            ungrouped:
              description: Events beyond the group limits, only counted here.
              returned: success
              type: int
            unplaced_lines:
              description: 'Lines naming NVRM (or SXid, since 1.4) in a format the reader does not know (no time
                stamp or sender it can place): not read, only counted here; when there are any an entry in errors
                (call ''kernel log'') gives the count and the first of them, and collection.status is partial. The
                formats read are journalctl short, short-iso and short-iso-precise, syslog and kern.log (classic,
                ISO 8601 with or without a zone, YYYY-MM-DD HH:MM:SS,mmm, RFC 5424), dmesg --ctime, dmesg --decode,
                raw dmesg (with or without its <priority>), /dev/kmsg and bare NVRM lines. Added in 1.3.'
              returned: success
              type: int
            groups:
              description: One entry per group, in the order first seen.
              returned: always
              type: list
              elements: dict
              contains:
                kind:
                  description: 'xid for Xid events, sxid for NVSwitch errors (since 1.4), else the kernel_event
                    kind. One of: xid, fallen_off_bus, api_mismatch, sxid, pcie_aer, pcie_aer_unrecovered, pcie_link_limited,
                    memory_error, machine_check, hung_task, soft_lockup, kernel_panic, init_failed, segfault, gsp_rpc_rate_limited.'
                  returned: success
                  type: str
                xid:
                  description: The Xid number (kind xid), else null.
                  returned: success
                  type: int
                pci_bus_id:
                  description: The GPU, as in the events; null when the log names none.
                  returned: success
                  type: str
                count:
                  description: Every event of the group in the collection window.
                  returned: success
                  type: int
                kept:
                  description: How many of them are in xid_events / kernel_events (at most 10).
                  returned: success
                  type: int
                first_time:
                  description: Time of the first event of the group that had one.
                  returned: success
                  type: str
                last_time:
                  description: Time of the last event of the group that had one.
                  returned: success
                  type: str
                dropped:
                  description: The events of the group that were counted but not kept.
                  returned: always
                  type: dict
                  contains:
                    count:
                      description: How many.
                      returned: success
                      type: int
                    untimed:
                      description: Of them, those without an ISO 8601 time (raw seconds since boot).
                      returned: success
                      type: int
                    by_hour:
                      description: Counts per UTC hour, keyed YYYY-MM-DDTHH (the 168 latest hours).
                      returned: always
                      type: dict
                    older:
                      description: Counts of hours older than by_hour holds, summed.
                      returned: success
                      type: int
                    older_until_hour:
                      description: The latest hour summed into older (YYYY-MM-DDTHH), null when none.
                      returned: success
                      type: str
                sxid:
                  description: The SXid number (kind sxid only). Added in 1.4.
                  returned: success
                  type: int
            oom_kills:
              description: Every OOM kill of the kernel log, counted on the host even when no unit is named (read
                with the kernel_log subset; added in 1.5).
              returned: always
              type: dict
              contains:
                count:
                  description: Kills by the kernel OOM killer in the window, whichever process or cgroup they hit.
                  returned: success
                  type: int
                global:
                  description: Of them, kills because the host ran out of memory (not a cgroup limit).
                  returned: success
                  type: int
                events:
                  description: The first 9 and the last of them, with unit, pod_uid and container_id.
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    time:
                      description: ISO 8601 time of the kill, or raw seconds since boot.
                      returned: success
                      type: str
                    pid:
                      description: The killed process.
                      returned: success
                      type: int
                    process:
                      description: Its name.
                      returned: success
                      type: str
                    cgroup:
                      description: Its memory cgroup (task_memcg, 'Task in').
                      returned: success
                      type: str
                    limit_cgroup:
                      description: The cgroup whose limit was reached (oom_memcg); null for a global OOM.
                      returned: success
                      type: str
                    constraint:
                      description: memcg (a cgroup limit), global (the machine ran out), or the kernel's other CONSTRAINT_*
                        in lower case.
                      returned: success
                      type: str
                    anon_rss_kib:
                      description: Anonymous memory it held when killed.
                      returned: success
                      type: int
                    unit:
                      description: 'kernel_log.oom_kills only: the systemd unit its cgroup names (the deepest .service
                        or .scope that is not a container''s). Added in 1.5.'
                      returned: success
                      type: str
                    pod_uid:
                      description: 'kernel_log.oom_kills only: the Kubernetes pod UID its cgroup names (kubepods...pod<uid>).
                        Added in 1.5.'
                      returned: success
                      type: str
                    container_id:
                      description: 'kernel_log.oom_kills only: the container id its cgroup names (docker-, cri-containerd-,
                        crio-<id>.scope, /docker/<id>). Added in 1.5.'
                      returned: success
                      type: str
        driver_clients:
          description: Processes that mapped NVIDIA userspace driver libraries (libcuda, libnvidia-*) of another
            version than the running kernel module, from /proc/<pid>/maps (gather_subset driver_clients); null when
            that subset did not run.
          returned: always
          type: dict
          contains:
            kernel_module_version:
              description: Version of the running kernel module the libraries were compared with; null when none
                is loaded.
              returned: success
              type: str
            status:
              description: 'complete (every process looked at), partial (the bound of 4096 processes or 10 seconds
                stopped the scan; what was found is kept), no_kernel_module (nothing to compare with, nothing scanned),
                proc_unreadable. One of: complete, partial, no_kernel_module, proc_unreadable.'
              returned: success
              type: str
            processes_scanned:
              description: Processes whose maps were looked at.
              returned: success
              type: int
            processes_unreadable:
              description: Processes whose maps could not be read (exited, or not root).
              returned: success
              type: int
            mismatched:
              description: The processes with a library of another version, at most 32.
              returned: always
              type: list
              elements: dict
              contains:
                pid:
                  description: Process id.
                  returned: success
                  type: int
                name:
                  description: 'Process name from /proc/<pid>/comm, as data: printable characters only, at most
                    64.'
                  returned: success
                  type: str
                container:
                  description: The process's cgroup path when it names a container (docker, containerd, CRI-O, podman,
                    Kubernetes pod), else null.
                  returned: success
                  type: str
                container_id:
                  description: The 64-hex container id in that cgroup path, when there is one.
                  returned: success
                  type: str
                library:
                  description: Path of the first mismatched library, as the process sees it (inside its container).
                  returned: success
                  type: str
                library_version:
                  description: Driver version in that library's file name.
                  returned: success
                  type: str
                compat:
                  description: True when the library comes from a CUDA forward-compatibility folder (a compat/ or
                    cuda-compat path).
                  returned: success
                  type: bool
                libraries:
                  description: Paths of the mismatched NVIDIA libraries the process mapped, at most 4.
                  returned: always
                  type: list
                  elements: str
            mismatched_left_out:
              description: Further such processes beyond the 32 kept.
              returned: success
              type: int
        errors:
          description: 'Every query that failed: the GPU (index or null), the call and the reason. Not-supported
            values are null without an entry. A reading that cannot be true (a temperature outside 0..200 C, negative
            memory, power, clocks or counters, a percentage outside 0..100, used, free or reserved memory above
            the total) is null, with an entry whose call is ''reading <field>'' (for example ''reading temperature.gpu_c'');
            since 1.1. So are counters beyond 2^63-1 (NVML''s 2^64-1 says ''not available''), memory beyond 16 TiB,
            and nvidia-smi values that are there but are no number of their unit (a decimal comma, more digits than
            any reading, NaN). On the controller, facts whose values do not have this schema''s types, or numbers
            that are not finite or integers beyond 64 bits, make the host''s collection failed.'
          returned: always
          type: list
          elements: dict
          contains:
            gpu:
              description: GPU index, or null for host-wide queries.
              returned: success
              type: int
            call:
              description: The query that failed (NVML function, command, file).
              returned: success
              type: str
            reason:
              description: 'Why it failed: the NVML error string, the command''s failure, or the parse error.'
              returned: success
              type: str
            code:
              description: NVML return code or exit status where there is one.
              returned: success
              type: int
        workload:
          description: The GPU services' own failures and settings (gather_subset workload; added in 1.2); null
            when that subset did not run.
          returned: always
          type: dict
          contains:
            window_hours:
              description: Hours of journal and kernel log read (kernel_log_window_hours).
              returned: success
              type: int
            services:
              description: The asked-for services first, then the other units that own GPU processes; at most 16.
              returned: always
              type: list
              elements: dict
              contains:
                unit:
                  description: systemd unit.
                  returned: success
                  type: str
                sources:
                  description: 'Why it is here: asked for (the policy''s workload.services, the services option)
                    and/or it owns a GPU process.'
                  returned: always
                  type: list
                  elements: str
                load_state:
                  description: 'LoadState (not-found: no such unit).'
                  returned: success
                  type: str
                active_state:
                  description: ActiveState.
                  returned: success
                  type: str
                sub_state:
                  description: 'SubState (auto-restart: waiting to restart after a failure).'
                  returned: success
                  type: str
                result:
                  description: Result of the last run (success, exit-code, signal, core-dump, oom-kill, start-limit-hit,
                    ...).
                  returned: success
                  type: str
                restarts:
                  description: 'NRestarts: automatic restarts since the unit was last started by hand (systemd 235
                    and later).'
                  returned: success
                  type: int
                last_exit:
                  description: The main process's last exit (ExecMainCode, ExecMainStatus).
                  returned: always
                  type: dict
                  contains:
                    code:
                      description: 'How the main process last ended: exited, killed, dumped.'
                      returned: success
                      type: str
                    status:
                      description: Its exit status (code exited).
                      returned: success
                      type: int
                    signal:
                      description: The signal that killed it (code killed or dumped), e.g. KILL, SEGV, ABRT.
                      returned: success
                      type: str
                main_pid:
                  description: MainPID; null when not running.
                  returned: success
                  type: int
                user:
                  description: 'User= of the unit; null: root.'
                  returned: success
                  type: str
                oom_kills:
                  description: Kernel OOM kills of the unit's processes (kernel log, as kernel_log_source says).
                  returned: always
                  type: dict
                  contains:
                    count:
                      description: Kills by the kernel OOM killer of processes in the unit's cgroup in the window.
                      returned: success
                      type: int
                    events:
                      description: The first 4 and the last of them.
                      returned: always
                      type: list
                      elements: dict
                      contains:
                        time:
                          description: ISO 8601 time of the kill, or raw seconds since boot.
                          returned: success
                          type: str
                        pid:
                          description: The killed process.
                          returned: success
                          type: int
                        process:
                          description: Its name.
                          returned: success
                          type: str
                        cgroup:
                          description: Its memory cgroup (task_memcg, 'Task in').
                          returned: success
                          type: str
                        limit_cgroup:
                          description: The cgroup whose limit was reached (oom_memcg); null for a global OOM.
                          returned: success
                          type: str
                        constraint:
                          description: memcg (a cgroup limit), global (the machine ran out), or the kernel's other
                            CONSTRAINT_* in lower case.
                          returned: success
                          type: str
                        anon_rss_kib:
                          description: Anonymous memory it held when killed.
                          returned: success
                          type: int
                        unit:
                          description: 'kernel_log.oom_kills only: the systemd unit its cgroup names (the deepest
                            .service or .scope that is not a container''s). Added in 1.5.'
                          returned: success
                          type: str
                        pod_uid:
                          description: 'kernel_log.oom_kills only: the Kubernetes pod UID its cgroup names (kubepods...pod<uid>).
                            Added in 1.5.'
                          returned: success
                          type: str
                        container_id:
                          description: 'kernel_log.oom_kills only: the container id its cgroup names (docker-, cri-containerd-,
                            crio-<id>.scope, /docker/<id>). Added in 1.5.'
                          returned: success
                          type: str
                    read:
                      description: False when no kernel log could be read (the count is then unknown, not zero).
                      returned: success
                      type: bool
                journal:
                  description: Failures in the unit's journal in the window (journalctl --unit -o json, the newest
                    20000 entries).
                  returned: always
                  type: dict
                  contains:
                    status:
                      description: 'read; partial (journalctl timed out, or showed only this user''s messages: what
                        it printed is counted); failed (journalctl failed, see reason); unavailable (no journalctl);
                        not_read (the unit does not exist). One of: read, partial, failed, unavailable, not_read.'
                      returned: success
                      type: str
                    reason:
                      description: Why the journal was not read whole.
                      returned: success
                      type: str
                    entries:
                      description: Entries read (the unit's, in the window).
                      returned: success
                      type: int
                    unparsed:
                      description: Entries that were not JSON (cut off, damaged).
                      returned: success
                      type: int
                    truncated:
                      description: 'True when journalctl''s bound of 20000 entries (the newest) was reached: counts
                        are of those.'
                      returned: success
                      type: bool
                    matches:
                      description: 'Per kind of failure: count, first and last entry. The first pattern that matches
                        an entry decides its kind, in this order.'
                      returned: always
                      type: dict
                      contains:
                        cuda_oom:
                          description: 'Framework out-of-memory errors: PyTorch ''CUDA out of memory'' (every layout),
                            CUBLAS_STATUS_ALLOC_FAILED, TensorFlow ResourceExhaustedError / OOM when allocating
                            tensor, JAX/XLA RESOURCE_EXHAUSTED, CUDA_ERROR_OUT_OF_MEMORY, TensorRT ''Error Code
                            2: OutOfMemory'', Triton/TensorRT-LLM cudaMalloc out of memory, vLLM KV cache too small
                            at start-up (since 1.5: all but the PyTorch ones). TensorFlow''s BFC allocator ''not
                            a failure'' warnings are not counted.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        illegal_memory_access:
                          description: '''an illegal memory access was encountered''.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        nccl_timeout:
                          description: NCCL watchdog timeouts (Watchdog caught collective operation timeout) and
                            other NCCL timeouts.
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        nccl_error:
                          description: Other NCCL errors (NCCL error, NCCL WARN, ncclSystemError ...; ProcessGroupNCCL
                            exceptions); since 1.5 the ones of a known cause are counted under nccl_network, nccl_resource
                            or nccl_cuda.
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        python_traceback:
                          description: '''Traceback (most recent call last):'' lines: one per Python traceback.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        oom_killed:
                          description: systemd's 'A process of this unit has been killed by the OOM killer' and
                            result 'oom-kill'.
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        cuda_ecc:
                          description: CUDA 'uncorrectable ECC error encountered' (code 39), from the job or its
                            NCCL watchdog. Added in 1.5.
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        cuda_driver_insufficient:
                          description: '''CUDA driver version is insufficient for CUDA runtime version'' (code 35),
                            in every runtime''s wording. Added in 1.5.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        cuda_forward_compat:
                          description: '''forward compatibility was attempted on non supported HW'' (Error 804).
                            Added in 1.5.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        cuda_devices_busy:
                          description: '''CUDA-capable device(s) is/are busy or unavailable'' (code 46; the old
                            ''all CUDA-capable devices are busy''). Added in 1.5.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        cuda_no_kernel_image:
                          description: '''no kernel image is available for execution on the device'', and PyTorch''s
                            ''CUDA capability sm_XX is not compatible'' warning. Added in 1.5.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        cudnn_mismatch:
                          description: cuDNN runtime against compiled version (TensorFlow/XLA 'Loaded runtime CuDNN
                            library', PyTorch and Caffe2 mismatch wordings). Added in 1.5.
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        device_side_assert:
                          description: '''device-side assert triggered'' and the kernel''s ''Assertion ... failed''
                            lines. Added in 1.5.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        nccl_network:
                          description: 'NCCL network or peer failures: InfiniBand/RoCE completion errors, ''remote
                            process exited or there was a network error'', socket calls failed or closed by the
                            peer (also an NCCL error whose following lines say so). Added in 1.5.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        nccl_resource:
                          description: 'NCCL failing on a local resource: ''Cuda failure ''out of memory'''', /dev/shm
                            too small, ibv_* ''Cannot allocate memory''. Added in 1.5.'
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                        nccl_cuda:
                          description: NCCL 'unhandled cuda error' with the CUDA error it carries (detail.cuda_error).
                            Added in 1.5.
                          returned: always
                          type: dict
                          contains:
                            count:
                              description: Entries of this kind in the window.
                              returned: success
                              type: int
                            first:
                              description: The first such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                            last:
                              description: The last such entry; null when none.
                              returned: always
                              type: dict
                              contains:
                                time:
                                  description: ISO 8601 UTC time of the journal entry (__REALTIME_TIMESTAMP).
                                  returned: success
                                  type: str
                                pid:
                                  description: _PID of the entry.
                                  returned: success
                                  type: int
                                message:
                                  description: 'The message: printable characters only, at most 300 (then ''...'').'
                                  returned: success
                                  type: str
                    cuda_oom_gpus:
                      description: GPU indexes named in the CUDA out-of-memory messages ('GPU 0'), as the process
                        numbered them (CUDA_VISIBLE_DEVICES applies).
                      returned: always
                      type: list
                      elements: int
                    details:
                      description: 'Per kind of matches (the keys of matches), what its messages say in numbers:
                        memory figures of an out-of-memory (allocated against reserved, other processes), both versions
                        of a cuDNN mismatch, the GPU architecture a build lacks, an NCCL failure''s peer, status
                        and the CUDA error it carries; see $defs/journal_failure_detail in the schema. Kinds whose
                        messages give nothing are absent. Added in 1.5.'
                      returned: always
                      type: dict
                frameworks:
                  description: Frameworks of the service's interpreter, from a probe run as its user (bounded by
                    command_timeout).
                  returned: always
                  type: dict
                  contains:
                    status:
                      description: 'read: the probe answered; not_python: ExecStart runs no Python interpreter (directly,
                        through env, a shebang or a shell wrapper''s exec); not_probed: the probe could not be run
                        as the service''s user (no become, no runuser; see reason); failed: the probe failed, timed
                        out or printed no JSON. One of: read, not_python, not_probed, failed.'
                      returned: success
                      type: str
                    interpreter:
                      description: The interpreter found from ExecStart.
                      returned: success
                      type: str
                    python:
                      description: Its Python version.
                      returned: success
                      type: str
                    packages:
                      description: The frameworks installed for that interpreter (read from package metadata and
                        version files; nothing is imported).
                      returned: always
                      type: list
                      elements: dict
                      contains:
                        name:
                          description: 'Framework (Python package). One of: torch, tensorflow, jax.'
                          returned: success
                          type: str
                        version:
                          description: Its version (package metadata).
                          returned: success
                          type: str
                        cuda:
                          description: 'CUDA runtime it was built for and carries: torch.version.cuda, TensorFlow''s
                            build_info cuda_version, JAX''s nvidia-cuda-runtime wheel (MAJOR.MINOR); null for a
                            CPU build or when unknown.'
                          returned: success
                          type: str
                        cudnn:
                          description: cuDNN it carries (nvidia-cudnn-cuXX wheel, TensorFlow's build_info).
                          returned: success
                          type: str
                        nccl:
                          description: NCCL it carries (nvidia-nccl-cuXX wheel).
                          returned: success
                          type: str
                    reason:
                      description: Why the frameworks are not known.
                      returned: success
                      type: str
                processes:
                  description: Its processes on the GPUs (from the GPU facts and /proc/<pid>/cgroup).
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    pid:
                      description: Process id.
                      returned: success
                      type: int
                    name:
                      description: Process name as the GPU facts list it.
                      returned: success
                      type: str
                    gpu_index:
                      description: The GPU it runs on (gpus[].index).
                      returned: success
                      type: int
                    gpu_uuid:
                      description: That GPU's UUID.
                      returned: success
                      type: str
                    used_memory_mib:
                      description: GPU memory it holds.
                      returned: success
                      type: int
                    environment:
                      description: 'From /proc/<pid>/environ (needs root), only these variables: CUDA_VISIBLE_DEVICES,
                        NVIDIA_VISIBLE_DEVICES, PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF, CUDA_MPS_*, NCCL_*
                        (at most 32, values printable, at most 256 characters). Nothing else of environ leaves the
                        host. null when it could not be read.'
                      returned: always
                      type: dict
                    environment_unreadable:
                      description: Why environment is null.
                      returned: success
                      type: str
            left_out:
              description: Units beyond the 16 kept.
              returned: success
              type: int
            oom_kills_elsewhere:
              description: OOM kills in the window of processes in other units.
              returned: success
              type: int
        host_pressure:
          description: CPU, memory and I/O pressure, load, memory and swap, sampled over a few seconds with GPU
            utilization (gather_subset host_pressure; added in 1.2); null when that subset did not run.
          returned: always
          type: dict
          contains:
            sample_seconds:
              description: Length of the sample (pressure_sample_seconds, shortened to fit the collection timeout).
              returned: success
              type: float
            cpus:
              description: Online CPUs (/sys/devices/system/cpu/online).
              returned: success
              type: int
            load:
              description: /proc/loadavg.
              returned: always
              type: dict
              contains:
                avg1:
                  description: Load average, 1 minute.
                  returned: success
                  type: float
                avg5:
                  description: 5 minutes.
                  returned: success
                  type: float
                avg15:
                  description: 15 minutes.
                  returned: success
                  type: float
                per_core_avg1:
                  description: 1-minute load per online CPU.
                  returned: success
                  type: float
            memory:
              description: /proc/meminfo.
              returned: always
              type: dict
              contains:
                total_mib:
                  description: MemTotal.
                  returned: success
                  type: float
                available_mib:
                  description: MemAvailable.
                  returned: success
                  type: float
                available_pct:
                  description: MemAvailable of MemTotal, percent.
                  returned: success
                  type: float
            swap:
              description: Swap and its activity (/proc/meminfo, /proc/vmstat).
              returned: always
              type: dict
              contains:
                total_mib:
                  description: SwapTotal.
                  returned: success
                  type: float
                free_mib:
                  description: SwapFree.
                  returned: success
                  type: float
                pages_in_per_s:
                  description: Pages swapped in per second over the sample (pswpin).
                  returned: success
                  type: float
                pages_out_per_s:
                  description: Pages swapped out per second over the sample (pswpout).
                  returned: success
                  type: float
            pressure:
              description: Pressure stall information.
              returned: always
              type: dict
              contains:
                cpu:
                  description: /proc/pressure/cpu; null when the kernel has no PSI.
                  returned: always
                  type: dict
                  contains:
                    some_pct:
                      description: Share of the sample during which at least one task stalled on the resource (from
                        the total counters), percent.
                      returned: success
                      type: float
                    full_pct:
                      description: Share during which all non-idle tasks stalled (null for cpu on kernels before
                        5.13).
                      returned: success
                      type: float
                    some_avg10:
                      description: The kernel's 10-second average of some.
                      returned: success
                      type: float
                    some_avg60:
                      description: The kernel's 60-second average of some.
                      returned: success
                      type: float
                    full_avg10:
                      description: The kernel's 10-second average of full.
                      returned: success
                      type: float
                    full_avg60:
                      description: The kernel's 60-second average of full.
                      returned: success
                      type: float
                    some_avg300:
                      description: The kernel's 300-second average of some. Added in 1.5.
                      returned: success
                      type: float
                    full_avg300:
                      description: The kernel's 300-second average of full. Added in 1.5.
                      returned: success
                      type: float
                memory:
                  description: /proc/pressure/memory; null when the kernel has no PSI.
                  returned: always
                  type: dict
                  contains:
                    some_pct:
                      description: Share of the sample during which at least one task stalled on the resource (from
                        the total counters), percent.
                      returned: success
                      type: float
                    full_pct:
                      description: Share during which all non-idle tasks stalled (null for cpu on kernels before
                        5.13).
                      returned: success
                      type: float
                    some_avg10:
                      description: The kernel's 10-second average of some.
                      returned: success
                      type: float
                    some_avg60:
                      description: The kernel's 60-second average of some.
                      returned: success
                      type: float
                    full_avg10:
                      description: The kernel's 10-second average of full.
                      returned: success
                      type: float
                    full_avg60:
                      description: The kernel's 60-second average of full.
                      returned: success
                      type: float
                    some_avg300:
                      description: The kernel's 300-second average of some. Added in 1.5.
                      returned: success
                      type: float
                    full_avg300:
                      description: The kernel's 300-second average of full. Added in 1.5.
                      returned: success
                      type: float
                io:
                  description: /proc/pressure/io; null when the kernel has no PSI.
                  returned: always
                  type: dict
                  contains:
                    some_pct:
                      description: Share of the sample during which at least one task stalled on the resource (from
                        the total counters), percent.
                      returned: success
                      type: float
                    full_pct:
                      description: Share during which all non-idle tasks stalled (null for cpu on kernels before
                        5.13).
                      returned: success
                      type: float
                    some_avg10:
                      description: The kernel's 10-second average of some.
                      returned: success
                      type: float
                    some_avg60:
                      description: The kernel's 60-second average of some.
                      returned: success
                      type: float
                    full_avg10:
                      description: The kernel's 10-second average of full.
                      returned: success
                      type: float
                    full_avg60:
                      description: The kernel's 60-second average of full.
                      returned: success
                      type: float
                    some_avg300:
                      description: The kernel's 300-second average of some. Added in 1.5.
                      returned: success
                      type: float
                    full_avg300:
                      description: The kernel's 300-second average of full. Added in 1.5.
                      returned: success
                      type: float
            gpu_utilization:
              description: Per GPU, utilization sampled about once a second during the sample.
              returned: always
              type: list
              elements: dict
              contains:
                index:
                  description: GPU index.
                  returned: success
                  type: int
                mean_pct:
                  description: Mean utilization over the samples.
                  returned: success
                  type: float
                min_pct:
                  description: Lowest sample.
                  returned: success
                  type: float
                max_pct:
                  description: Highest sample.
                  returned: success
                  type: float
                samples:
                  description: Samples taken.
                  returned: success
                  type: int
            gpu_utilization_source:
              description: 'nvidia-smi (sampled), facts (only the GPU facts'' reading: nvidia-smi was not there
                or failed), null (none). One of: nvidia-smi, facts, null.'
              returned: success
              type: str
            vmstat_since_boot:
              description: '/proc/vmstat counters of memory pressure since boot (cumulative: two audits give the
                rate); null when /proc/vmstat was not readable. Added in 1.5.'
              returned: always
              type: dict
              contains:
                pswpin:
                  description: Pages swapped in. Null when this kernel has no such counter.
                  returned: success
                  type: int
                pswpout:
                  description: Pages swapped out. Null when this kernel has no such counter.
                  returned: success
                  type: int
                compact_stall:
                  description: Direct compactions (an allocation waited for memory to be compacted). Null when this
                    kernel has no such counter.
                  returned: success
                  type: int
                compact_fail:
                  description: Compactions that failed (huge pages not allocated). Null when this kernel has no
                    such counter.
                  returned: success
                  type: int
                thp_fault_fallback:
                  description: Transparent huge page faults that fell back to small pages. Null when this kernel
                    has no such counter.
                  returned: success
                  type: int
                pgmajfault:
                  description: Major page faults. Null when this kernel has no such counter.
                  returned: success
                  type: int
                oom_kill:
                  description: Kills by the OOM killer (kernels 4.13 and later). Null when this kernel has no such
                    counter.
                  returned: success
                  type: int
                allocstall:
                  description: Allocations that stalled in direct reclaim (allocstall_* of all zones summed). Null
                    when this kernel has no such counter.
                  returned: success
                  type: int
        bmc:
          description: The BMC's sensors and event log (gather_subset bmc, in band; or joined from gpufleet.core.bmc_facts
            over LAN by the audit); null when neither ran. Added in 1.2.
          returned: always
          type: dict
          contains:
            source:
              description: 'in_band: ipmitool on the host through /dev/ipmi0 (gather_subset bmc); lan: ipmitool
                over the network from the controller (gpufleet.core.bmc_facts); redfish: the chassis''s Redfish
                documents (bmc_facts protocol=redfish: Power and Thermal, or PowerSubsystem, ThermalSubsystem, EnvironmentMetrics
                and LeakDetection, and the SEL''s LogEntryCollection). One of: in_band, lan, redfish.'
              returned: success
              type: str
            address:
              description: The BMC's address for lan; null in band.
              returned: success
              type: str
            status:
              description: 'complete; partial (the sensors or the event log could not be read); failed (neither;
                errors says why: no ipmitool, no permission, no answer); no_device (no /dev/ipmi0: no BMC driver
                or no BMC; not an error). One of: complete, partial, failed, no_device.'
              returned: success
              type: str
            reasons:
              description: What could not be read; empty when complete.
              returned: always
              type: list
              elements: str
            sensors:
              description: Every SDR sensor (ipmitool sdr elist, sdr list or sensor), at most 256.
              returned: always
              type: list
              elements: dict
              contains:
                name:
                  description: Sensor name as the BMC's SDR gives it.
                  returned: success
                  type: str
                kind:
                  description: 'What the sensor measures, from its unit, name and entity. One of: fan, power_supply,
                    redundancy, temperature, power, voltage, other.'
                  returned: success
                  type: str
                status:
                  description: 'ipmitool''s status column: ok, ns (no reading), nc/cr/nr or lnc/lcr/lnr/unc/ucr/unr
                    (a lower or upper non-critical, critical or non-recoverable threshold crossed).'
                  returned: success
                  type: str
                reading:
                  description: Numeric reading in unit; null for discrete sensors and sensors without a reading.
                  returned: success
                  type: float
                unit:
                  description: RPM, degrees C, Watts, percent, Volts, Amps or null.
                  returned: success
                  type: str
                states:
                  description: Discrete states the BMC reports (e.g. Presence detected, Failure detected, Redundancy
                    Lost).
                  returned: always
                  type: list
                  elements: str
            sensors_left_out:
              description: Sensors beyond the 256 kept.
              returned: success
              type: int
            fans:
              description: Fan sensors.
              returned: always
              type: list
              elements: dict
              contains:
                name:
                  description: Fan sensor.
                  returned: success
                  type: str
                rpm:
                  description: Speed in RPM when the sensor reads RPM.
                  returned: success
                  type: float
                percent:
                  description: Speed in percent when the sensor reads percent.
                  returned: success
                  type: float
                status:
                  description: 'ipmitool''s status column (ns, na: no reading); with Redfish, the Health as ok,
                    nc (Warning) or cr (Critical).'
                  returned: success
                  type: str
                failed:
                  description: Below a critical or non-recoverable threshold, stopped (0 RPM with a reading), a
                    failure state, or Redfish Health Critical.
                  returned: success
                  type: bool
                slow:
                  description: Below a non-critical threshold.
                  returned: success
                  type: bool
                no_reading:
                  description: 'The BMC reads nothing from this fan (ipmitool ns or na, a Redfish fan without a
                    Reading) though it has not disabled the sensor (state Disabled): a dead fan or an empty fan
                    header. Added in 1.5.'
                  returned: success
                  type: bool
            power_supplies:
              description: Power supply sensors.
              returned: always
              type: list
              elements: dict
              contains:
                name:
                  description: Power supply sensor.
                  returned: success
                  type: str
                watts:
                  description: Output power when the sensor reads watts.
                  returned: success
                  type: float
                present:
                  description: Presence detected (true), absent (false), or not said (null).
                  returned: success
                  type: bool
                failed:
                  description: Failure detected, a critical threshold crossed, or Redfish Health Critical.
                  returned: success
                  type: bool
                predictive_failure:
                  description: Predictive failure asserted, or Redfish Health Warning (degraded).
                  returned: success
                  type: bool
                ac_lost:
                  description: AC (input) lost.
                  returned: success
                  type: bool
                offline:
                  description: 'Present but out of service: Redfish Status.State Disabled or UnavailableOffline
                    (a supply in Standby or Absent is not). Added in 1.5.'
                  returned: success
                  type: bool
                states:
                  description: Discrete states as the BMC words them.
                  returned: always
                  type: list
                  elements: str
            redundancy:
              description: Redundancy sensors (power supplies, fans).
              returned: always
              type: list
              elements: dict
              contains:
                name:
                  description: Redundancy sensor.
                  returned: success
                  type: str
                group:
                  description: 'What is redundant, from the sensor''s name and entity. One of: power_supply, fan,
                    other.'
                  returned: success
                  type: str
                state:
                  description: 'Fully Redundant, Redundancy Lost, Redundancy Degraded, or Non-Redundant (running
                    without a spare). From Redfish: Health OK, Critical (lost) or Warning (degraded); a group whose
                    State is UnavailableOffline or StandbyOffline is lost whatever its Health, one that is Disabled
                    or has fewer members in its ActiveRedundancyGroup than MinNeededForFaultTolerance is non_redundant.
                    One of: redundant, lost, degraded, non_redundant.'
                  returned: success
                  type: str
                text:
                  description: The states as the BMC words them.
                  returned: success
                  type: str
            temperatures:
              description: Temperature sensors.
              returned: always
              type: list
              elements: dict
              contains:
                name:
                  description: Temperature sensor.
                  returned: success
                  type: str
                celsius:
                  description: Reading in degrees C.
                  returned: success
                  type: float
                status:
                  description: ipmitool's status column.
                  returned: success
                  type: str
            inlet_temperature_c:
              description: The first inlet or ambient temperature sensor's reading (with Redfish, else ThermalMetrics'
                Intake or Ambient summary).
              returned: success
              type: float
            exhaust_temperature_c:
              description: The first exhaust or outlet temperature sensor's reading (with Redfish, else ThermalMetrics'
                Exhaust summary).
              returned: success
              type: float
            power_draw_w:
              description: 'The chassis power draw: DCMI''s instantaneous reading, else the first power sensor of
                the SDR.'
              returned: success
              type: float
            power_draw_source:
              description: dcmi, sdr:<sensor name>, or redfish (PowerControl's PowerConsumedWatts, else EnvironmentMetrics'
                PowerWatts).
              returned: success
              type: str
            clock_offset_s:
              description: The BMC clock (sel time get) minus the host's clock, in seconds, for lining SEL times
                up with the kernel log.
              returned: success
              type: int
            leak_detectors:
              description: Liquid-cooling leak detectors (Redfish LeakDetection's detector groups and LeakDetector
                resources); empty with ipmitool. Added in 1.5.
              returned: always
              type: list
              elements: dict
              contains:
                name:
                  description: The detector (DeviceName or Name).
                  returned: success
                  type: str
                type:
                  description: LeakDetectorType (Moisture, FloatSwitch); null in a group's excerpt.
                  returned: success
                  type: str
                state:
                  description: 'DetectorState as the BMC gives it: OK, Warning, Critical (a leak), or a vendor''s
                    LeakDetected.'
                  returned: success
                  type: str
                health:
                  description: The detector's Status.Health; null in a group's excerpt.
                  returned: success
                  type: str
            sel:
              description: The System Event Log of the window; null when it could not be read (and with source redfish
                when the service has no SEL log).
              returned: always
              type: dict
              contains:
                window_hours:
                  description: The window, the module's kernel_log_window_hours.
                  returned: success
                  type: int
                count:
                  description: Records in the window, kept or not (records without a time count as in it).
                  returned: success
                  type: int
                untimed:
                  description: Of them, records without a time.
                  returned: success
                  type: int
                dropped:
                  description: Records of the window not kept in events (only the latest 100 are).
                  returned: success
                  type: int
                total_records:
                  description: Records in the whole event log.
                  returned: success
                  type: int
                by_severity:
                  description: Records of the window per severity.
                  returned: always
                  type: dict
                  contains:
                    critical:
                      description: See the schema.
                      returned: success
                      type: int
                    warning:
                      description: See the schema.
                      returned: success
                      type: int
                    info:
                      description: See the schema.
                      returned: success
                      type: int
                events:
                  description: The latest records of the window, in log order.
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    id:
                      description: SEL record id as ipmitool prints it (hexadecimal).
                      returned: success
                      type: str
                    time:
                      description: UTC time, ISO 8601 (ipmitool -Z), comparable with xid_events[].time; null when
                        the BMC clock was not set (Pre-Init).
                      returned: success
                      type: str
                    raw_time:
                      description: The date and time columns as printed, when time is null.
                      returned: success
                      type: str
                    sensor:
                      description: The sensor (type and name) the record is about.
                      returned: success
                      type: str
                    event:
                      description: The event as ipmitool words it (e.g. Failure detected, Lower Critical going low).
                      returned: success
                      type: str
                    asserted:
                      description: True for an assertion, false for a deassertion (the condition ended).
                      returned: success
                      type: bool
                    detail:
                      description: Further columns (reading and threshold).
                      returned: success
                      type: str
                    severity:
                      description: 'From the event text: failures, AC lost, fatal and uncorrectable errors, critical
                        thresholds and lost redundancy are critical; predictive failures, correctable-error limits,
                        non-critical thresholds, non-redundancy and chassis intrusion are warnings. One of: critical,
                        warning, info.'
                      returned: success
                      type: str
                    cleared:
                      description: An assertion that a later record of the same sensor and event deasserts.
                      returned: success
                      type: bool
                open_before_window:
                  description: 'Critical states (a power supply''s failure or lost input, lost redundancy) asserted
                    before the window and never deasserted since, the latest of each sensor and event, at most 10:
                    still open by the log''s own account. One-time events (ECC, bus errors) are not kept here. Added
                    in 1.5.'
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    id:
                      description: SEL record id as ipmitool prints it (hexadecimal).
                      returned: success
                      type: str
                    time:
                      description: UTC time, ISO 8601 (ipmitool -Z), comparable with xid_events[].time; null when
                        the BMC clock was not set (Pre-Init).
                      returned: success
                      type: str
                    raw_time:
                      description: The date and time columns as printed, when time is null.
                      returned: success
                      type: str
                    sensor:
                      description: The sensor (type and name) the record is about.
                      returned: success
                      type: str
                    event:
                      description: The event as ipmitool words it (e.g. Failure detected, Lower Critical going low).
                      returned: success
                      type: str
                    asserted:
                      description: True for an assertion, false for a deassertion (the condition ended).
                      returned: success
                      type: bool
                    detail:
                      description: Further columns (reading and threshold).
                      returned: success
                      type: str
                    severity:
                      description: 'From the event text: failures, AC lost, fatal and uncorrectable errors, critical
                        thresholds and lost redundancy are critical; predictive failures, correctable-error limits,
                        non-critical thresholds, non-redundancy and chassis intrusion are warnings. One of: critical,
                        warning, info.'
                      returned: success
                      type: str
                    cleared:
                      description: An assertion that a later record of the same sensor and event deasserts.
                      returned: success
                      type: bool
            errors:
              description: The BMC queries that failed (in band they are also in errors[]).
              returned: always
              type: list
              elements: dict
              contains:
                call:
                  description: The ipmitool query that failed (connection options left out).
                  returned: success
                  type: str
                reason:
                  description: 'Why: ipmitool''s message (a password never appears), a timeout, a missing program.'
                  returned: success
                  type: str
        kubernetes:
          description: The NVIDIA device plugin's GPU sharing and the node's advertised GPU resources on a Kubernetes
            node (gather_subset kubernetes); null when that subset did not run. Added in 1.2.
          returned: always
          type: dict
          contains:
            node:
              description: True when the host is a Kubernetes node (a kubelet config or the device-plugins folder).
              returned: success
              type: bool
            node_name:
              description: The node's name (kubernetes_node_name, else the host name in lower case).
              returned: success
              type: str
            status:
              description: 'partial: something could not be read (errors says what). One of: complete, partial,
                not_a_node.'
              returned: success
              type: str
            sharing:
              description: The device plugin's sharing config; null when none was found.
              returned: always
              type: dict
              contains:
                source:
                  description: file:<path> or configmap:<namespace>/<name>.
                  returned: success
                  type: str
                config_name:
                  description: The ConfigMap key that was used.
                  returned: success
                  type: str
                version:
                  description: The config's version (v1 when unset).
                  returned: success
                  type: str
                strategy:
                  description: 'The active sharing: mps when sharing.mps has a resource with replicas > 1, else
                    time_slicing when sharing.timeSlicing has, else none. One of: none, time_slicing, mps.'
                  returned: success
                  type: str
                mig_strategy:
                  description: flags.migStrategy (none, single, mixed) when the config sets it.
                  returned: success
                  type: str
                resources:
                  description: The replicated resources of the active strategy.
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    name:
                      description: Resource name, e.g. nvidia.com/gpu or nvidia.com/mig-1g.10gb.
                      returned: success
                      type: str
                    replicas:
                      description: Replicas per device; null when the config's value is not an integer.
                      returned: success
                      type: int
                rename_by_default:
                  description: 'renameByDefault: shared resources advertised as <name>.shared.'
                  returned: success
                  type: bool
                fail_requests_greater_than_one:
                  description: failRequestsGreaterThanOne (for mps true when unset, as the plugin does).
                  returned: success
                  type: bool
                error:
                  description: Why the config could not be read; the other values are then defaults.
                  returned: success
                  type: str
            resources:
              description: What the node advertises; null when neither kubectl nor the checkpoint gave it.
              returned: always
              type: dict
              contains:
                source:
                  description: 'kubectl get node, or the devices the plugin registered in /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint
                    (healthy or not). One of: kubectl, kubelet_checkpoint.'
                  returned: success
                  type: str
                allocatable:
                  description: nvidia.com/* resources the node can allocate.
                  returned: always
                  type: dict
                capacity:
                  description: nvidia.com/* capacity (kubectl only).
                  returned: always
                  type: dict
            labels:
              description: The node's nvidia.com/* labels (kubectl only), at most 128.
              returned: always
              type: dict
            errors:
              description: What could not be read (also in errors[]).
              returned: always
              type: list
              elements: dict
              contains:
                call:
                  description: The ipmitool query that failed (connection options left out).
                  returned: success
                  type: str
                reason:
                  description: 'Why: ipmitool''s message (a password never appears), a timeout, a missing program.'
                  returned: success
                  type: str
            device_health:
              description: 'The device plugin''s log: devices marked unhealthy, recovered, pods rejected at admission;
                null when the host is no node. Added in 1.5.'
              returned: always
              type: dict
              contains:
                status:
                  description: 'read; partial (a log file could not be read); absent (neither device plugin nor
                    GPU Operator controller pod logs under /var/log/pods on this node: restarting is still read);
                    not_read. One of: read, partial, absent, not_read.'
                  returned: success
                  type: str
                sources:
                  description: The log files read (/var/log/pods/<namespace>_<pod>_<uid>/<container>/N.log of the
                    nvidia-device-plugin pods and of the GPU Operator's controller).
                  returned: always
                  type: list
                  elements: str
                unhealthy:
                  description: 'Devices the plugin marked unhealthy (''<resource>'' device marked unhealthy: <id>)
                    and not healthy again since, at most 64.'
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    resource:
                      description: The resource (nvidia.com/gpu, nvidia.com/mig-1g.5gb).
                      returned: success
                      type: str
                    device:
                      description: The device id (GPU or MIG UUID).
                      returned: success
                      type: str
                    xid:
                      description: The Xid the plugin gave as the reason (XidCriticalError), null when it gave none.
                      returned: success
                      type: int
                recovered:
                  description: Devices marked unhealthy and then healthy again.
                  returned: always
                  type: list
                  elements: str
                admission_failures:
                  description: '''Allocate failed due to ...'' (UnexpectedAdmissionError) in the text read, at most
                    64.'
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    kind:
                      description: 'unhealthy_devices: ''no healthy devices present; cannot allocate unhealthy devices'';
                        shared_request_too_large: a pod asked more replicas of a shared resource than failRequestsGreaterThanOne
                        allows; other. One of: unhealthy_devices, shared_request_too_large, other.'
                      returned: success
                      type: str
                    resources:
                      description: The nvidia.com/* resources it names.
                      returned: always
                      type: list
                      elements: str
                    requested:
                      description: 'shared_request_too_large: what the pod asked for.'
                      returned: success
                      type: int
                    limit:
                      description: 'shared_request_too_large: the largest request allowed.'
                      returned: success
                      type: int
                    reason:
                      description: The reason as the kubelet gives it, at most 300 characters.
                      returned: success
                      type: str
                operator:
                  description: What the GPU Operator's controller log (its pod on this node, JSON or console encoding)
                    says of the ClusterPolicy; null when the controller does not run on this node.
                  returned: always
                  type: dict
                  contains:
                    ready:
                      description: False when the controller's last word on the ClusterPolicy is that it is not
                        ready, true when it is, null when its log says neither.
                      returned: success
                      type: bool
                    states_not_ready:
                      description: The states it names as not ready (state-device-plugin, gpu-feature-discovery
                        ...).
                      returned: always
                      type: list
                      elements: str
                    steps_not_ready:
                      description: '"ClusterPolicy step wasn''t ready" lines (older console encoding).'
                      returned: success
                      type: int
                restarting:
                  description: Containers of the GPU stack on this node (pods of the gpu-operator namespace, nvidia-*,
                    gpu-feature-discovery) that restarted, most restarts first, at most 32; read from /var/log/pods
                    without kubectl.
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    pod:
                      description: The pod's name.
                      returned: success
                      type: str
                    container:
                      description: The container (null when read from a `kubectl get pods` table).
                      returned: success
                      type: str
                    restarts:
                      description: 'How often it restarted: the highest N of its N.log files (the kubelet names
                        a container''s log after its restart count).'
                      returned: success
                      type: int
        validation:
          description: Active diagnostics (DCGM diag, nvbandwidth, nccl-tests, stress) as gpufleet.core.gpu_validate
            returns them; gpu_facts does not collect it. Absent unless the checks ran. Added in 1.6.
          returned: always
          type: dict
          contains:
            format:
              description: 'Version of this family''s shape. One of: 1.'
              returned: success
              type: int
            started_at:
              description: When gpu_validate started, UTC ISO 8601.
              returned: success
              type: str
            finished_at:
              description: When it finished, UTC ISO 8601.
              returned: success
              type: str
            refused:
              description: null, or why no check ran (every requested check then has status refused).
              returned: always
              type: dict
              contains:
                reason:
                  description: 'Why nothing ran: GPU compute processes run, their list is unknown, or the GPUs could
                    not be read.'
                  returned: success
                  type: str
                how_to_proceed:
                  description: 'What to do: drain or quarantine the node, wait for the processes to end, run again.'
                  returned: success
                  type: str
                gpu_processes:
                  description: The compute processes found.
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    pid:
                      description: Process id.
                      returned: success
                      type: int
                    name:
                      description: Process name.
                      returned: success
                      type: str
                    gpu:
                      description: GPU index.
                      returned: success
                      type: int
            mig_enabled:
              description: 'A GPU is in MIG mode: nvbandwidth, nccl_all_reduce and stress are skipped with the reason;
                dcgm_diag runs.'
              returned: success
              type: bool
            gpus:
              description: The GPUs gpu_validate saw, to attribute results per GPU.
              returned: always
              type: list
              elements: dict
              contains:
                index:
                  description: GPU index.
                  returned: success
                  type: int
                uuid:
                  description: GPU UUID.
                  returned: success
                  type: str
                name:
                  description: Product name.
                  returned: success
                  type: str
                pci_bus_id:
                  description: PCI bus id (0000:0f:00.0).
                  returned: success
                  type: str
            checks:
              description: Each requested check's result.
              returned: always
              type: dict
              contains:
                dcgm_diag:
                  description: dcgmi diag -r LEVEL -j (DCGM 3.x or 4.x JSON; the text table when the output is not
                    JSON).
                  returned: always
                  type: dict
                  contains:
                    status:
                      description: 'passed; failed: the tool ran and reported a fault; error: the tool or its harness
                        could not do its job (not a GPU verdict); skipped: not found or not applicable (reason says
                        which; also every check in check mode); timeout: killed at its bound; refused: the node
                        was busy, nothing ran. One of: passed, failed, skipped, error, timeout, refused.'
                      returned: success
                      type: str
                    reason:
                      description: Why the status, in words; empty when passed.
                      returned: success
                      type: str
                    command:
                      description: The argv run (or that would run in check mode); empty when nothing ran.
                      returned: always
                      type: list
                      elements: str
                    duration_s:
                      description: Seconds the command ran; 0 when it did not run.
                      returned: success
                      type: float
                    tool_version:
                      description: The tool's version as it printed it (DCGM 3.3.8, nvbandwidth v0.7, nccl-tests
                        2.13.10); null when it did not say.
                      returned: success
                      type: str
                    output_tail:
                      description: The last 4 KiB of what the command printed (stdout, then stderr).
                      returned: success
                      type: str
                    level:
                      description: 'The dcgmi diag -r level (1-4). One of: 1, 2, 3, 4.'
                      returned: success
                      type: int
                    tests:
                      description: The tests DCGM reported, in its order.
                      returned: always
                      type: list
                      elements: dict
                      contains:
                        name:
                          description: 'The test as DCGM names it: 3.x ''GPU Memory'', ''PCIe'', ''Targeted Stress'';
                            4.x ''memory'', ''pcie'', ''software''.'
                          returned: success
                          type: str
                        category:
                          description: Deployment, Integration, Hardware, Stress (DCGM's sections); null when the
                            output did not say.
                          returned: success
                          type: str
                        status:
                          description: 'The test''s result as DCGM reported it (an unknown word counts as warn,
                            never as pass). One of: pass, fail, warn, skip.'
                          returned: success
                          type: str
                        gpus:
                          description: 'Per GPU index (as a string): its result and messages. A 3.x ''Pass - All''
                            gives every GPU the metadata lists.'
                          returned: always
                          type: dict
                        messages:
                          description: Warnings and info that name no GPU (e.g. 'There was an internal error during
                            the test').
                          returned: always
                          type: list
                          elements: str
                nvbandwidth:
                  description: nvbandwidth -t TESTCASES.
                  returned: always
                  type: dict
                  contains:
                    status:
                      description: 'passed; failed: the tool ran and reported a fault; error: the tool or its harness
                        could not do its job (not a GPU verdict); skipped: not found or not applicable (reason says
                        which; also every check in check mode); timeout: killed at its bound; refused: the node
                        was busy, nothing ran. One of: passed, failed, skipped, error, timeout, refused.'
                      returned: success
                      type: str
                    reason:
                      description: Why the status, in words; empty when passed.
                      returned: success
                      type: str
                    command:
                      description: The argv run (or that would run in check mode); empty when nothing ran.
                      returned: always
                      type: list
                      elements: str
                    duration_s:
                      description: Seconds the command ran; 0 when it did not run.
                      returned: success
                      type: float
                    tool_version:
                      description: The tool's version as it printed it (DCGM 3.3.8, nvbandwidth v0.7, nccl-tests
                        2.13.10); null when it did not say.
                      returned: success
                      type: str
                    output_tail:
                      description: The last 4 KiB of what the command printed (stdout, then stderr).
                      returned: success
                      type: str
                    testcases:
                      description: The test cases nvbandwidth ran, in its order.
                      returned: always
                      type: list
                      elements: dict
                      contains:
                        name:
                          description: The nvbandwidth test case, e.g. host_to_device_memcpy_ce.
                          returned: success
                          type: str
                        unit:
                          description: The matrix's unit, GB/s.
                          returned: success
                          type: str
                        per_gpu:
                          description: 'GB/s per GPU index: the GPU''s value of a 1xN host<->device row (or Nx1
                            column); for an NxN device-to-device matrix the mean of the GPU''s off-diagonal row.'
                          returned: always
                          type: dict
                        matrix:
                          description: The matrix as printed, rows then columns; N/A cells null (the diagonal of
                            a device-to-device matrix is no pair, not a failed one).
                          returned: always
                          type: list
                          elements: list
                        sum:
                          description: The 'SUM <test case> <value>' line; null when not printed.
                          returned: success
                          type: float
                        error:
                          description: 'The first failure line of the test case (''Invalid value when checking the
                            pattern ...'', an ASSERT, a CUDA error, an abort), ''no bandwidth matrix was printed'',
                            or ''waived: ...'' (a test case that does not apply, such as device-to-device on one
                            GPU); null when it printed its matrix.'
                          returned: success
                          type: str
                nccl_all_reduce:
                  description: all_reduce_perf -b MIN -e MAX -f 2 -g GPUS (nccl-tests).
                  returned: always
                  type: dict
                  contains:
                    status:
                      description: 'passed; failed: the tool ran and reported a fault; error: the tool or its harness
                        could not do its job (not a GPU verdict); skipped: not found or not applicable (reason says
                        which; also every check in check mode); timeout: killed at its bound; refused: the node
                        was busy, nothing ran. One of: passed, failed, skipped, error, timeout, refused.'
                      returned: success
                      type: str
                    reason:
                      description: Why the status, in words; empty when passed.
                      returned: success
                      type: str
                    command:
                      description: The argv run (or that would run in check mode); empty when nothing ran.
                      returned: always
                      type: list
                      elements: str
                    duration_s:
                      description: Seconds the command ran; 0 when it did not run.
                      returned: success
                      type: float
                    tool_version:
                      description: The tool's version as it printed it (DCGM 3.3.8, nvbandwidth v0.7, nccl-tests
                        2.13.10); null when it did not say.
                      returned: success
                      type: str
                    output_tail:
                      description: The last 4 KiB of what the command printed (stdout, then stderr).
                      returned: success
                      type: str
                    gpus:
                      description: GPUs in the run (its device lines, else nThread x nGpus, else the -g given).
                      returned: success
                      type: int
                    rows:
                      description: The result rows, smallest size first.
                      returned: always
                      type: list
                      elements: dict
                      contains:
                        size_bytes:
                          description: Message size, bytes.
                          returned: success
                          type: int
                        count:
                          description: Elements.
                          returned: success
                          type: int
                        type:
                          description: Data type (float, bfloat16, ...).
                          returned: success
                          type: str
                        redop:
                          description: Reduction (sum; none for all_gather); null in the old 11-column layout.
                          returned: success
                          type: str
                        time_us:
                          description: Out-of-place time, microseconds.
                          returned: success
                          type: float
                        algbw_gbs:
                          description: Out-of-place algorithm bandwidth, GB/s.
                          returned: success
                          type: float
                        busbw_gbs:
                          description: Out-of-place bus bandwidth, GB/s.
                          returned: success
                          type: float
                        wrong:
                          description: '#wrong of the out-of-place run; null when validation was off (N/A) or the
                            old layout printed a non-zero max error.'
                          returned: success
                          type: int
                    peak_busbw_gbs:
                      description: Highest out-of-place bus bandwidth, GB/s; null without rows.
                      returned: success
                      type: float
                    avg_busbw_gbs:
                      description: '''# Avg bus bandwidth'', GB/s; null when not printed.'
                      returned: success
                      type: float
                    error_text:
                      description: The first failure line, e.g. "Test CUDA failure common.cu:941 'system not yet
                        initialized'" or "Test NCCL failure ..."; null when none.
                      returned: success
                      type: str
                stress:
                  description: dcgmi diag -r targeted_stress or gpu_burn SECONDS; gpu-burn's exit status is not
                    trusted.
                  returned: always
                  type: dict
                  contains:
                    status:
                      description: 'passed; failed: the tool ran and reported a fault; error: the tool or its harness
                        could not do its job (not a GPU verdict); skipped: not found or not applicable (reason says
                        which; also every check in check mode); timeout: killed at its bound; refused: the node
                        was busy, nothing ran. One of: passed, failed, skipped, error, timeout, refused.'
                      returned: success
                      type: str
                    reason:
                      description: Why the status, in words; empty when passed.
                      returned: success
                      type: str
                    command:
                      description: The argv run (or that would run in check mode); empty when nothing ran.
                      returned: always
                      type: list
                      elements: str
                    duration_s:
                      description: Seconds the command ran; 0 when it did not run.
                      returned: success
                      type: float
                    tool_version:
                      description: The tool's version as it printed it (DCGM 3.3.8, nvbandwidth v0.7, nccl-tests
                        2.13.10); null when it did not say.
                      returned: success
                      type: str
                    output_tail:
                      description: The last 4 KiB of what the command printed (stdout, then stderr).
                      returned: success
                      type: str
                    tool:
                      description: 'The stress tool. One of: dcgm_targeted_stress, gpu_burn.'
                      returned: success
                      type: str
                    seconds:
                      description: How long it was asked to load the GPUs.
                      returned: success
                      type: int
                    per_gpu:
                      description: Per GPU index.
                      returned: always
                      type: dict
        fabric:
          description: 'The network fabric: InfiniBand / RoCE HCAs and ports with their cumulative counters, GPUDirect
            RDMA readiness and the GPU-to-NIC topology (gather_subset fabric, docs/fabric.md); absent when that
            subset did not run. Added in 1.6.'
          returned: always
          type: dict
          contains:
            hcas:
              description: The InfiniBand / RoCE HCAs (/sys/class/infiniband; else ibstat; else ibv_devinfo -v);
                empty on a host with the folder and no HCA; null when none of the sources is there.
              returned: always
              type: list
              elements: dict
              contains:
                name:
                  description: The HCA's name (mlx5_0).
                  returned: success
                  type: str
                hca_type:
                  description: hca_type (MT4129 is ConnectX-7; ibstat CA type; ibv_devinfo vendor_part_id as MT<id>).
                  returned: success
                  type: str
                board_id:
                  description: board_id (the PSID).
                  returned: success
                  type: str
                fw_ver:
                  description: The firmware version.
                  returned: success
                  type: str
                node_guid:
                  description: The node GUID as sysfs writes it (four groups of four hex digits).
                  returned: success
                  type: str
                pci_bus_id:
                  description: The HCA's PCI address (device/uevent PCI_SLOT_NAME), 0000:1a:00.0.
                  returned: success
                  type: str
                ports:
                  description: Its ports.
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    port:
                      description: The port's number (from 1).
                      returned: success
                      type: int
                    state:
                      description: 'The logical port state in upper case: DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER
                        (sysfs state, ibstat State, ibv_devinfo state).'
                      returned: success
                      type: str
                    state_code:
                      description: Its number (1 DOWN ... 4 ACTIVE).
                      returned: success
                      type: int
                    phys_state:
                      description: 'The physical port state as sysfs spells it: Sleep, Polling, Disabled, PortConfigurationTraining,
                        LinkUp, LinkErrorRecovery, Phy Test.'
                      returned: success
                      type: str
                    phys_state_code:
                      description: Its number (2 Polling, 3 Disabled, 5 LinkUp ...).
                      returned: success
                      type: int
                    link_layer:
                      description: InfiniBand or Ethernet (RoCE).
                      returned: success
                      type: str
                    rate_gbps:
                      description: The port's active rate in Gb/s (sysfs rate; ibstat Rate; ibv_devinfo -v width
                        x lane speed).
                      returned: success
                      type: float
                    width:
                      description: The active link width (1X, 2X, 4X, 8X, 12X) where the source names it.
                      returned: success
                      type: str
                    speed:
                      description: The active lane speed (SDR, DDR, QDR, FDR, EDR, HDR, NDR, XDR) where the source
                        names it.
                      returned: success
                      type: str
                    netdev:
                      description: The port's network interface (ports/<n>/gid_attrs/ndevs/0, else the HCA's device/net/).
                      returned: success
                      type: str
                    counters:
                      description: Every file of ports/<n>/counters as an integer, cumulative (symbol_error, link_downed,
                        link_error_recovery, port_rcv_errors, port_rcv_remote_physical_errors, port_xmit_discards,
                        excessive_buffer_overrun_errors, local_link_integrity_errors, port_xmit_wait, ...); empty
                        when the source has none (ibstat, ibv_devinfo).
                      returned: always
                      type: dict
                    hw_counters:
                      description: Every file of ports/<n>/hw_counters (mlx5's) as an integer, cumulative.
                      returned: always
                      type: dict
                    ethtool:
                      description: ethtool -S of the netdev of an Ethernet (RoCE) port, cumulative; null for an
                        InfiniBand port or where ethtool did not answer.
                      returned: always
                      type: dict
            hcas_source:
              description: 'Where hcas were read. One of: sysfs, ibstat, ibv_devinfo, null.'
              returned: success
              type: str
            gpudirect:
              description: GPUDirect RDMA readiness.
              returned: always
              type: dict
              contains:
                peermem_loaded:
                  description: nvidia_peermem (or the older nv_peer_mem) is in /proc/modules (else lsmod); null
                    when neither could be read.
                  returned: success
                  type: bool
                dmabuf_supported:
                  description: 'GPUDirect RDMA over dma-buf is possible as the host shows it: the NVIDIA open kernel
                    module (/proc/driver/nvidia/version) on a kernel of 5.12 or later; null when either cannot be
                    read.'
                  returned: success
                  type: bool
                acs:
                  description: Every PCI bridge with an ACS control (lspci -nnvv, read only), with whether it redirects
                    peer-to-peer traffic; null on a host without HCAs, without lspci, or when lspci could not read
                    the extended capabilities (not root).
                  returned: always
                  type: list
                  elements: dict
                  contains:
                    bdf:
                      description: The bridge's PCI address.
                      returned: success
                      type: str
                    acs_ctl:
                      description: lspci's ACSCtl flags as printed.
                      returned: success
                      type: str
                    redirect_enabled:
                      description: 'ReqRedir+ or CmpltRedir+: peer-to-peer traffic through this bridge is sent up
                        to the root complex (GPUDirect RDMA crosses the CPU or fails).'
                      returned: success
                      type: bool
                    secondary_bus:
                      description: 'The first bus behind the bridge (lspci Bus: secondary=).'
                      returned: success
                      type: int
                    subordinate_bus:
                      description: 'The last bus behind it (subordinate=): a GPU or NIC whose PCI bus lies in secondary_bus..subordinate_bus
                        is below this bridge.'
                      returned: success
                      type: int
            topology:
              description: nvidia-smi topo -m; null without nvidia-smi or when it failed.
              returned: always
              type: dict
              contains:
                devices:
                  description: 'The matrix''s columns: GPU0 ..., NIC0 ... (or mlx5_0 ... in older drivers'' output).'
                  returned: always
                  type: list
                  elements: str
                matrix:
                  description: '{row device: {column device: X, SYS, NODE, PHB, PXB, PIX or NV<n>}}; a row cut short
                    keeps the cells it has.'
                  returned: always
                  type: dict
                nic_names:
                  description: '{NIC0: mlx5_0} from the NIC legend (an HCA named in the header names itself).'
                  returned: always
                  type: dict
                cpu_affinity:
                  description: '{GPU0: 0-47} (CPU Affinity column).'
                  returned: always
                  type: dict
                numa_affinity:
                  description: '{GPU0: 0} (NUMA Affinity column).'
                  returned: always
                  type: dict
"""
# END GENERATED RETURN

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS, inventory_bmc_spec, kernel_log_spec
from ansible_collections.gpufleet.core.plugins.module_utils.collector import (
    Collection, CollectionError, validate_fixture)
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import module_host
from ansible_collections.gpufleet.core.plugins.module_utils.k8s_sharing import DEFAULT_CONFIG_FILES, KubernetesOptions

# pynvml is imported only when the source can use NVML (load_pynvml): a collection through nvidia-smi
# never pays for it. None: not installed (tests set it so); NotImplemented: not looked for yet.
pynvml = NotImplemented


def load_pynvml():
    global pynvml  # pylint: disable=global-statement
    if pynvml is NotImplemented:
        try:
            import pynvml as module  # optional: a host without the NVML bindings is read through nvidia-smi
        except ImportError:
            module = None
        pynvml = module
    return pynvml


def uses_nvml(source, fixture):
    if source == "replay":
        return bool(fixture and fixture.get("nvml"))
    return source in ("auto", "nvml")


def load_fixture(module, path):
    try:
        with open(path) as handle:
            return validate_fixture(json.load(handle), path)
    except (IOError, OSError) as exc:
        module.fail_json(msg="fixture %s cannot be read: %s" % (path, to_native(exc)))
    except ValueError as exc:
        module.fail_json(msg="fixture %s is not valid JSON: %s" % (path, to_native(exc)))
    except CollectionError as exc:
        module.fail_json(msg=to_native(exc))


def load_capture(module, path, source):
    # imported here: a live collection never compiles it (AnsiballZ ships sources, compiled on every host)
    from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import CaptureError, open_capture
    if source not in ("auto", "nvidia_smi"):
        module.fail_json(msg="capture is read with source=auto or nvidia_smi (source is %s): NVML cannot be "
                             "captured" % source)
    try:
        return open_capture(path)
    except CaptureError as exc:
        module.fail_json(msg=to_native(exc))


def write_fixture(module, path, document):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        module.fail_json(msg="record: folder %s does not exist" % folder)
    descriptor, temporary = tempfile.mkstemp(prefix=".gpufleet-fixture-", dir=folder)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(document, handle, indent=1, sort_keys=True)
    module.atomic_move(temporary, path)


def kubernetes_options(params):
    return KubernetesOptions(
        config_files=params["kubernetes_device_plugin_config"], configmap=params["kubernetes_configmap"],
        use_kubectl=params["kubernetes_kubectl"], kubeconfig=params["kubernetes_kubeconfig"],
        node_name=params["kubernetes_node_name"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type="str", default="auto", choices=["auto", "nvml", "nvidia_smi", "replay"]),
            gather_subset=dict(type="list", elements="str", default=["all"]),
            timeout=dict(type="int", default=60),
            command_timeout=dict(type="int", default=20),
            **kernel_log_spec(),
            kernel_log_window_hours=dict(type="int", default=WINDOW_HOURS),
            services=dict(type="list", elements="str", default=[]),
            pressure_sample_seconds=dict(type="int", default=3),
            kubernetes_device_plugin_config=dict(type="list", elements="path", default=list(DEFAULT_CONFIG_FILES)),
            kubernetes_kubectl=dict(type="bool", default=False),
            kubernetes_kubeconfig=dict(type="path"),
            kubernetes_configmap=dict(type="str"),
            kubernetes_node_name=dict(type="str"),
            record=dict(type="path"),
            scrub=dict(type="bool", default=True),
            fixture=dict(type="path"),
            capture=dict(type="path"),
            # read by the action plugin on the controller, never sent to the host (plugins/action/gpu_facts.py)
            not_audited_msg=dict(type="str"),
            run_dir=dict(type="path"),
            keep_facts=dict(type="bool", default=True),
            policy=dict(type="dict"),
            validation=dict(type="dict"),
            **inventory_bmc_spec()
        ),
        required_if=[("source", "replay", ["fixture"]), ("kernel_log_source", "files", ["kernel_log_files"])],
        mutually_exclusive=[("record", "fixture"), ("capture", "fixture"), ("capture", "record")],
        supports_check_mode=True,
    )
    params = module.params
    for name in ("timeout", "command_timeout", "kernel_log_window_hours"):
        if params[name] <= 0:
            module.fail_json(msg="%s must be a positive number of seconds or hours, not %s" % (name, params[name]))
    if not 0 <= params["pressure_sample_seconds"] <= 60:
        module.fail_json(msg="pressure_sample_seconds must be 0 to 60, not %s" % params["pressure_sample_seconds"])
    if params["fixture"] and params["source"] != "replay":
        module.fail_json(msg="fixture is only read with source=replay (source is %s)" % params["source"])
    fixture = load_fixture(module, params["fixture"]) if params["source"] == "replay" else None
    capture = load_capture(module, params["capture"], params["source"]) if params["capture"] else None
    needs_nvml = params["source"] == "nvml" or (fixture is not None and bool(fixture.get("nvml")))
    nvml = load_pynvml() if capture is None and uses_nvml(params["source"], fixture) else None
    if needs_nvml and nvml is None:
        module.fail_json(msg="source=%s needs the Python package nvidia-ml-py (import pynvml) on the target"
                         % params["source"])
    try:
        collection = Collection(
            source=params["source"], gather_subset=params["gather_subset"], timeout=params["timeout"],
            command_timeout=params["command_timeout"], kernel_log_source=params["kernel_log_source"],
            kernel_log_files=params["kernel_log_files"], kernel_log_window_hours=params["kernel_log_window_hours"],
            services=params["services"], record=bool(params["record"]), scrub=params["scrub"],
            pressure_sample_seconds=params["pressure_sample_seconds"],
            fixture=fixture, pynvml=nvml,
            host=module_host(module), kubernetes=kubernetes_options(params), capture=capture)
        facts, recorded = collection.run()
    except CollectionError as exc:
        module.fail_json(msg=to_native(exc))

    changed = False
    if recorded is not None and not module.check_mode:
        write_fixture(module, params["record"], recorded)
        changed = True
    module.exit_json(changed=changed, ansible_facts=dict(gpufleet=facts))


if __name__ == "__main__":
    main()
