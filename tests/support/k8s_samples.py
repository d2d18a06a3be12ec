"""NVIDIA device plugin config files of the project's own (config version v1)."""

TIME_SLICING = """\
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


MPS = """\
version: v1
sharing:
  mps:
    renameByDefault: true   # advertised as nvidia.com/gpu.shared
    resources:
      - name: nvidia.com/gpu
        replicas: 10
"""


MIXED_MIG = """\
version: v1
flags:
  migStrategy: mixed
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 2
    - name: nvidia.com/mig-1g.10gb
      replicas: 4
"""


NO_SHARING = """\
version: v1
flags:
  migStrategy: single
  failOnInitError: true
  plugin:
    deviceListStrategy: [envvar]
"""
