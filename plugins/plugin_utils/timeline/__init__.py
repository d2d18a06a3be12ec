# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident timeline: one parser per evidence source (kernel, journal, bmc, packages, boots), the
project's own earlier runs (history), and the assembly on one UTC time axis with the events that lie close
in time across sources marked (build)."""
