#!/usr/bin/env bash
# Installs the reference tools and simulators the integration tests talk to,
# from Debian's packages, when they are missing. Safe to run again.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
have fence_dummy || need+=(fence-agents)   # the reference agents: fence_dummy, fence_ipmilan, fence_redfish, ...
have ipmi_sim || need+=(openipmi)          # the IPMI BMC simulator
have ipmitool || need+=(ipmitool)          # fence_ipmilan drives BMCs through it
have snmpd || need+=(snmpd)                # the PDU simulator's SNMP agent
have snmpget || need+=(snmp)               # fence_apc_snmp and fence_eaton_snmp run the snmp* tools
have sshd || need+=(openssh-server)        # the FC switch simulator's SSH server
have ssh || need+=(openssh-client)         # fence_brocade logs in with ssh
have ceph-mon || need+=(ceph-mon ceph-mgr ceph-osd ceph-common)  # a real one-host Ceph cluster for fencegroup
have pacemakerd || need+=(pacemaker)       # a real Pacemaker cluster on loopback runs fencectl as a fence agent
have corosync || need+=(corosync)
have stonith_admin || need+=(pacemaker-cli-utils)
have pcs || need+=(pcs)                    # validates fencectl's metadata as an admin's pcs stonith create does
have sbd || need+=(sbd)                    # the shared-disk poison pill (SBD) the sbd driver interoperates with
have losetup || need+=(util-linux)         # the loop devices sbd needs (it refuses a plain file)
have sfdisk || need+=(fdisk)              # partitions the generated disks the lsblk inventory test reads
have debugfs || need+=(e2fsprogs)         # mkfs.ext4 -d and debugfs: a root filesystem with /etc/metal, probed unmounted
have promtool || need+=(prometheus)      # promtool checks and tests the alert rules; a real Prometheus evaluates them
have curl || need+=(curl)                  # the teardown API end-to-end test calls it as an operator would
/usr/bin/python3 -c "import sushy" >/dev/null 2>&1 || need+=(python3-sushy)  # reads back the Redfish boot override, as Ironic would

if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi

echo "installing: ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "need root (or sudo) to install ${need[*]}; the integration tests will skip (or fail with CI=true)" >&2
		exit 0
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
