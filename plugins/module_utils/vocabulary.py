# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The words findings, policies, reports and playbooks share: layers, severities, fix roles.

Defined once, here, and read by the rule registry, the policy's validators, the knowledge
loader, every report renderer, the argument specs of audit_report (its `choices`) and, through
audit_report's result (fixable_roles), remediate.yml. It lives in module_utils because a module's
argument spec may import only from there; it is plain data, so nothing of it runs on a host.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The four layers, in the order reports list them (docs/architecture.md, "A rule").
LAYERS = ("hardware", "driver", "scheduling", "workload")
LAYER_ORDER = dict((layer, position) for position, layer in enumerate(LAYERS))

# Severities, worst first; a rank of 0 is "not a severity".
SEVERITIES = ("critical", "warning", "info")
SEVERITY_RANK = dict((severity, len(SEVERITIES) - position) for position, severity in enumerate(SEVERITIES))

# report.fail_severity and audit_report's fail_severity: a severity, or 'none' (no finding fails the run).
NO_FAILURE = "none"
FAIL_SEVERITIES = SEVERITIES + (NO_FAILURE,)
DEFAULT_FAIL_SEVERITY = "critical"

# The roles a finding may name as its fix.
FIX_ROLES = ("worker_limits", "restart_policy", "gpu_settings", "mig_layout", "driver")

# remediate.yml: the driver role only repairs (a kernel module / userspace library mismatch; other driver
# changes are driver_rollout.yml's), first; then GPU modes and MIG layout (they may restart GPU services),
# then the services' worker limits and restart policies.
REPAIR_ROLES = ("driver",)
REMEDIATION_ROLES = ("gpu_settings", "mig_layout", "worker_limits", "restart_policy")
# What remediate.yml can run, in its order: also the --tags that select roles by hand.
FIXABLE_ROLES = REPAIR_ROLES + REMEDIATION_ROLES

# The GPU recovery action the driver asks for, as the facts name it, in the order of NVML's values
# (nvmlDeviceGpuRecoveryAction_t: 0 none ... 5 recover IMEX domain). The controller's xid_decode.yml gives
# each its severity and action.
RECOVERY_ACTIONS = ("none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset", "recover_imex_domain")
# The words nvidia-smi (gpu_recovery_action) and the Xid 154 message use for them, lower case.
RECOVERY_ACTION_WORDS = {
    "none": "none",
    "reset": "gpu_reset", "gpu reset": "gpu_reset", "gpu reset required": "gpu_reset",
    "reboot": "node_reboot", "node reboot": "node_reboot", "node reboot required": "node_reboot",
    "drain p2p": "drain_p2p",
    "drain and reset": "drain_and_reset", "drain & reset": "drain_and_reset",
    "recover imex domain": "recover_imex_domain",
}


def recovery_action_name(text):
    """'Node Reboot Required' / 'Reset' / 'drain_and_reset' -> the facts' name; None for anything else."""
    words = " ".join(str(text or "").replace("_", " ").lower().split())
    name = words.replace(" ", "_")
    return RECOVERY_ACTION_WORDS.get(words) or (name if name in RECOVERY_ACTIONS else None)
