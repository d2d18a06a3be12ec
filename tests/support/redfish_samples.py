"""Redfish Power and Thermal documents of the project's own (DMTF schema shapes)."""

# A GPU server's chassis, written for these tests: PSU 2 critical, redundancy lost, Fan 3 below its critical
# threshold, Fan 4 warning, inlet 37 C.
POWER = {
    "@odata.type": "#Power.v1_5_0.Power",
    "PowerControl": [{"MemberId": "0", "Name": "Chassis Power", "PowerConsumedWatts": 6120}],
    "PowerSupplies": [
        {"MemberId": "0", "Name": "PSU", "LastPowerOutputWatts": 3010, "Status": {"Health": "OK", "State": "Enabled"}},
        {"MemberId": "1", "Name": "PSU", "LastPowerOutputWatts": 0, "Status": {"Health": "Critical", "State": "Enabled"}},
        {"MemberId": "2", "Name": "PSU", "Status": {"State": "Absent"}},
    ],
    "Redundancy": [{"MemberId": "0", "Name": "PSU Redundancy", "Mode": "N+m", "Status": {"Health": "Critical", "State": "Enabled"}}],
}


THERMAL = {
    "@odata.type": "#Thermal.v1_4_0.Thermal",
    "Fans": [
        {"Name": "Fan 1", "Reading": 9800, "ReadingUnits": "RPM", "LowerThresholdCritical": 1500,
         "LowerThresholdNonCritical": 2500, "Status": {"Health": "OK", "State": "Enabled"}},
        {"Name": "Fan 3", "Reading": 900, "ReadingUnits": "RPM", "LowerThresholdCritical": 1500,
         "Status": {"Health": "OK", "State": "Enabled"}},
        {"Name": "Fan 4", "Reading": 41, "ReadingUnits": "Percent", "Status": {"Health": "Warning", "State": "Enabled"}},
        {"Name": "Fan 5", "Status": {"State": "Absent"}},
    ],
    "Temperatures": [
        {"Name": "CPU1 Temp", "PhysicalContext": "CPU", "ReadingCelsius": 66, "Status": {"Health": "OK"}},
        {"Name": "Front Intake", "PhysicalContext": "Intake", "ReadingCelsius": 37, "Status": {"Health": "Warning"}},
        {"Name": "Rear Exhaust", "PhysicalContext": "Exhaust", "ReadingCelsius": 58, "Status": {"Health": "OK"}},
    ],
}
