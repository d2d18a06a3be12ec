"""Synthetic nvidia-smi -q -x documents written for the tests."""

SYNTHETIC = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <driver_version>550.54.15</driver_version>
  <cuda_version>12.4</cuda_version>
  <gpu id="00000000:3B:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <product_architecture>Hopper</product_architecture>
    <uuid>GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee</uuid>
    <fan_speed>[Not Supported]</fan_speed>
    <compute_mode>Exclusive_Process</compute_mode>
    <mig_mode><current_mig>Disabled</current_mig><pending_mig>Enabled</pending_mig></mig_mode>
    <clocks_event_reasons>
      <clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>
      <clocks_event_reason_sw_power_cap>Active</clocks_event_reason_sw_power_cap>
      <clocks_event_reason_hw_thermal_slowdown>Active</clocks_event_reason_hw_thermal_slowdown>
      <clocks_event_reason_sync_boost>[Unknown Error]</clocks_event_reason_sync_boost>
    </clocks_event_reasons>
    <ecc_errors>
      <volatile>
        <sram_correctable>2</sram_correctable>
        <sram_uncorrectable_parity>1</sram_uncorrectable_parity>
        <sram_uncorrectable_secded>N/A</sram_uncorrectable_secded>
        <dram_correctable>5</dram_correctable>
        <dram_uncorrectable>3</dram_uncorrectable>
      </volatile>
    </ecc_errors>
    <retired_pages>
      <pending_blacklist>No</pending_blacklist>
      <pending_retirement>Yes</pending_retirement>
    </retired_pages>
    <remapped_rows>
      <remapped_row_corr>0</remapped_row_corr>
      <remapped_row_unc>2</remapped_row_unc>
      <remapped_row_pending>Yes</remapped_row_pending>
      <remapped_row_failure>No</remapped_row_failure>
    </remapped_rows>
    <fabric>
      <state>Completed</state>
      <status>Success</status>
      <cliqueId>4</cliqueId>
      <clusterUuid>N/A</clusterUuid>
    </fabric>
    <processes>
      <process_info>
        <gpu_instance_id>1</gpu_instance_id>
        <compute_instance_id>0</compute_instance_id>
        <pid>4242</pid>
        <type>C</type>
        <process_name>python3</process_name>
        <used_memory>N/A</used_memory>
      </process_info>
      <process_info>
        <pid>N/A</pid>
        <type>C</type>
      </process_info>
    </processes>
  </gpu>
</nvidia_smi_log>
"""
