#!/usr/bin/env bash
# Install the system tools tibench drives (MariaDB, sysbench, numactl, Prometheus for the
# resource-metrics tests) when missing. Debian/Ubuntu through apt as root or with sudo;
# elsewhere, print the commands to run. Quick when everything is present.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
have mariadbd || have mysqld || need+=(mariadb-server)
have mariadb || have mysql || need+=(mariadb-client)
have sysbench || need+=(sysbench)
have numactl || need+=(numactl)
# DM's dump and load units (Debian's mydumper package holds both mydumper and myloader)
{ have mydumper && have myloader; } || need+=(mydumper)
have prometheus || need+=(prometheus)
have prometheus-node-exporter || need+=(prometheus-node-exporter)
# the JDK and Maven build tibench's YCSB binding (the upstream YCSB runs on the embedded server)
have java || need+=(default-jdk-headless)
have mvn || need+=(maven)
# a CJK font, so plots with Chinese labels (lang: zh) render every glyph
{ [ -d /usr/share/fonts/opentype/noto ] && ls /usr/share/fonts/opentype/noto 2>/dev/null | grep -qi cjk; } \
  || need+=(fonts-noto-cjk)
# Chromium for the notebooks' browser test (Debian's own package; elsewhere the test is skipped)
if ! have chromium && ! have chromium-browser && grep -qs "^ID=debian" /etc/os-release; then
  need+=(chromium)
fi
# OpenSSH's server runs two loopback client hosts for the SSH client-host tests and demo
have sshd || need+=(openssh-server)
# Debian's own python3 needs python3-venv for `python3 -m venv` (ensurepip)
python3 -c "import ensurepip" >/dev/null 2>&1 || need+=(python3-venv)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"; else
      echo "tibench setup: missing ${need[*]}; run as root or install them:" >&2
      echo "  sudo apt-get install -y ${need[*]}" >&2
      exit 1
    fi
  fi
  echo "tibench setup: installing ${need[*]} with apt-get" >&2
  # Installing a server package must not start a system-wide service: tibench runs its own.
  export DEBIAN_FRONTEND=noninteractive RUNLEVEL=1
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
  # Debian starts packaged daemons when it can; tibench starts its own on free ports.
  for svc in mariadb prometheus prometheus-node-exporter; do
    $SUDO service "$svc" stop >/dev/null 2>&1 || true
  done
  exit 0
fi

cat >&2 <<MSG
tibench setup: missing ${need[*]} and no apt-get here. Install them with your package manager:
  dnf:  sudo dnf install -y mariadb-server mariadb sysbench numactl golang-github-prometheus node-exporter mydumper java-17-openjdk-headless maven
  brew: brew install mariadb sysbench prometheus node_exporter mydumper openjdk maven   (numactl: Linux only)
  fonts: google-noto-sans-cjk-fonts (dnf), font-noto-sans-cjk (brew cask)
MSG
exit 1
