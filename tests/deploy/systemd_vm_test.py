#!/usr/bin/env python3
"""The packaged unit, started by a real systemd as PID 1, attaches every probe.

PID 1 is not systemd on this host, so a VM boots one: Debian's packaged Linux 6.1 under qemu
(software emulation), its root a fresh Debian 12 root (tests/deploy/debian_root.py) shared
over 9p, with the .deb installed by apt-get and the unit enabled by `systemctl enable`.
There systemd 252 starts stagewatch.service with its whole sandbox (mount namespaces,
ProtectSystem, the system call filter, MemoryDenyWriteExecute, ...). A check unit ordered
after it prints, on the serial console, what the test then requires:

- the unit is active, its main process is not uid 0, holds no capability once its probes
  are attached (it drops the unit's CAP_BPF and CAP_PERFMON then),
  has no_new_privs and a seccomp filter;
- /metrics answers with stagewatch_probe_attached 1 for every probe.

Debian's kernels default to kernel.perf_event_paranoid=3, a distribution patch under which
perf_event_open needs CAP_SYS_ADMIN whatever CAP_PERFMON; the guest sets 2 in sysctl.d, the
way docs/deploy.md tells users to.

    systemd_vm_test.py BUILD_DIR
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import time

from debian_root import cached_root_tarball
from deploy_support import REPO, fail, log, need_root, need_tools, run, unit_settings

TIMEOUT_S = int(os.environ.get("STAGEWATCH_VM_TIMEOUT", "900"))

CHECK_SCRIPT = r"""#!/bin/bash
# Prints what systemd made of stagewatch.service, then powers the VM off.
{
echo "SWCHECK begin"
for i in $(seq 1 600); do
  journalctl -u stagewatch --no-pager | grep -q '"listening"\|msg=listening' && break
  systemctl is-failed -q stagewatch && break
  sleep 1
done
echo "SWCHECK active=$(systemctl is-active stagewatch)"
pid=$(systemctl show -p MainPID --value stagewatch)
grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/$pid/status | sed 's/^/SWCHECK /'
perl -MIO::Socket::INET -e '
  my $s = IO::Socket::INET->new("127.0.0.1:9617") or die "SWCHECK connect: $!\n";
  print $s "GET /metrics HTTP/1.0\r\n\r\n";
  print map { "SWCHECK $_" } grep { /^stagewatch_probe_attached/ } <$s>;'
journalctl -u stagewatch --no-pager -o cat | tail -20
echo "SWCHECK end"
} > /dev/ttyS0 2>&1
systemctl poweroff
"""

CHECK_UNIT = """[Unit]
Description=prints how stagewatch.service runs, then powers off
After=stagewatch.service

[Service]
Type=oneshot
ExecStart=/usr/local/bin/stagewatch-vm-check

[Install]
WantedBy=multi-user.target
"""

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules/order); do insmod /modules/$m; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose rootfs /newroot ||
  { echo "SWCHECK cannot mount the root over 9p"; poweroff -f; }
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /lib/systemd/systemd
"""


def kernel(build):
    """vmlinuz and the 9p modules of the newest packaged 6.1 kernel: the VM stage's own cache."""
    fetch = subprocess.run([os.path.join(REPO, "tests", "vm", "fetch-kernel.sh"), build],
                           capture_output=True, text=True)
    if fetch.returncode != 0:
        fail(f"no kernel to boot: {fetch.stderr.strip()}")
    return fetch.stdout.strip().splitlines()[-1]


def guest_root(work, deb):
    """The fresh root with the package installed and enabled, and the check unit."""
    root = f"{work}/root"
    run(["tar", "-C", root, "--numeric-owner", "-xf", cached_root_tarball()])
    shutil.copy("/etc/resolv.conf", f"{root}/etc/resolv.conf")
    shutil.copy(deb, f"{root}/tmp/")
    install = (f"mount --make-rprivate / && mount -t proc proc {root}/proc && chroot {root} sh -c "
               f"'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
               f"--no-install-recommends /tmp/{os.path.basename(deb)} && "
               f"systemctl enable stagewatch.service stagewatch-vm-check.service'")
    with open(f"{root}/usr/local/bin/stagewatch-vm-check", "w") as f:
        f.write(CHECK_SCRIPT)
    os.chmod(f"{root}/usr/local/bin/stagewatch-vm-check", 0o755)
    with open(f"{root}/etc/systemd/system/stagewatch-vm-check.service", "w") as f:
        f.write(CHECK_UNIT)
    with open(f"{root}/etc/sysctl.d/50-stagewatch.conf", "w") as f:
        f.write("kernel.perf_event_paranoid = 2\n")  # docs/deploy.md, "Debian kernels"
    with open(f"{root}/etc/fstab", "w") as f:
        f.write("rootfs / 9p rw 0 0\n")
    run(["unshare", "-m", "sh", "-c", install], timeout=600)
    return root


def initramfs(work, kdir):
    initrd = f"{work}/initrd"
    for d in ("bin", "dev", "proc", "sys", "newroot", "modules"):
        os.makedirs(f"{initrd}/{d}")
    shutil.copy(shutil.which("busybox"), f"{initrd}/bin/busybox")
    for f in glob.glob(f"{kdir}/modules/*"):
        shutil.copy(f, f"{initrd}/modules/")
    with open(f"{initrd}/init", "w") as f:
        f.write(INIT)
    os.chmod(f"{initrd}/init", 0o755)
    image = f"{work}/initrd.cpio.gz"
    subprocess.run(f"cd {initrd} && find . | cpio -o -H newc --quiet | gzip -1 > {image}",
                   shell=True, check=True)
    return image


def check_console(console, settings):
    lines = [l.split("SWCHECK ", 1)[1].strip() for l in console.splitlines() if "SWCHECK " in l]
    if "end" not in lines:
        fail(f"the guest never finished its check:\n{console[-6000:]}")
    facts = dict(l.split(":", 1) for l in lines if re.match(r"^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):", l))
    if "active=active" not in lines:
        fail(f"stagewatch.service is not active under systemd:\n{console[-6000:]}")
    caps = {"CAP_BPF": 39, "CAP_PERFMON": 38}
    wanted = sum(1 << caps[c] for c in " ".join(settings["AmbientCapabilities"]).split())
    # The unit grants only `wanted`; once its probes are attached the agent drops even those
    # (--capabilities.keep is empty), so nothing is effective and the bounding set holds no more.
    bounding = int(facts.get("CapBnd", "ff"), 16)
    if facts.get("Uid", "0").split()[0] == "0" or int(facts.get("CapEff", "ff"), 16) != 0 or \
       bounding & ~wanted or facts.get("NoNewPrivs", "").strip() != "1" or \
       facts.get("Seccomp", "").strip() != "2":
        fail(f"the service's process under systemd: {facts}; wanted non-root, CapEff 0 after "
             f"attach, CapBnd within {wanted:x}, NoNewPrivs 1, Seccomp 2")
    attached = dict(re.findall(r'^stagewatch_probe_attached\{probe="([^"]+)"[^}]*\} (\S+)$',
                               "\n".join(lines), re.M))
    if not attached or any(v != "1" for v in attached.values()):
        fail(f"stagewatch_probe_attached under systemd: {attached}\n{console[-6000:]}")
    log(f"under systemd: active, uid {facts['Uid'].split()[0]}, CapEff {facts['CapEff'].strip()}, "
        f"NoNewPrivs, seccomp; all {len(attached)} probes attached: {sorted(attached)}")


def main():
    build = os.path.abspath(sys.argv[1])
    need_root("booting the packaged unit under systemd in a VM")
    need_tools("qemu-system-x86_64", "busybox", "cpio")
    started = time.monotonic()
    deb = run([os.path.join(REPO, "scripts", "build-deb.sh"), build]).stdout.split()[-1]
    kdir = kernel(build)
    work = os.path.join(build, "deploy-vm")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(f"{work}/root")
    try:
        root = guest_root(work, deb)
        image = initramfs(work, kdir)
        prepared = time.monotonic()
        cmd = ["timeout", str(TIMEOUT_S), "qemu-system-x86_64", "-accel", "tcg,thread=multi",
               "-cpu", "max", "-smp", "2", "-m", "1024", "-kernel", f"{kdir}/vmlinuz",
               "-initrd", image, "-append",
               "console=ttyS0 cgroup_no_v1=all tsc=reliable panic=-1 loglevel=4 systemd.show_status=0",
               "-virtfs", f"local,path={root},mount_tag=rootfs,security_model=passthrough,multidevs=remap",
               "-nic", "none", "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot"]
        log("+ " + " ".join(cmd))
        console = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 errors="replace").stdout
        with open(f"{build}/deploy-vm-console.log", "w") as f:
            f.write(console)
        booted = time.monotonic()
        check_console(console, unit_settings(f"{root}/lib/systemd/system/stagewatch.service"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"timings: prepare {prepared - started:.0f} s, boot to poweroff {booted - prepared:.0f} s")
    log("PASS")


if __name__ == "__main__":
    main()
