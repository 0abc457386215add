/**
 * The program that enters a running instance's sandbox for `slipway exec`, run as root by the
 * platform with Perl (perl-base is an essential Debian package; nothing is loaded once it starts).
 *
 * Why not nsenter: joining a user namespace hands the caller every capability in it and resets
 * its bounding set and securebits (the kernel's set_cred_user_ns), and nsenter then execs the
 * command as is. An instance running as root inside its image would get capabilities bubblewrap
 * took from it (unmounting its read-only binds, raw frames towards its network helper). The
 * capabilities can only be dropped between the join and the exec, by code already loaded:
 * the sandbox's file system may have no setpriv, nor the libraries one needs.
 *
 * Arguments: syscall numbers (SYSCALLS), the control group files to join (one per line), `1` to
 * join the namespaces on fds 4..10 (user first, mount last), uid, gid, working directory, the
 * terminal size (`ROWSxCOLS`, or empty), then the command. With a terminal, fd 3 carries resizes
 * (`ROWS COLS\n`). The outer process stays in the host's PID namespace, waits for the command's
 * side and exits as it did (128 + signal when killed).
 */
export const EXEC_HELPER = String.raw`
use strict;
my ($sys, $procs, $join, $uid, $gid, $cwd, $tty, @cmd) = @ARGV;
my %n; @n{qw(setns setgroups setresgid setresuid prctl capset close setsid)} = split /,/, $sys;
sub fail { syswrite(STDERR, "slipway exec: $_[0]\n"); exit 126 }
sub status { my $s = shift; return $s & 127 ? 128 + ($s & 127) : $s >> 8 }
for my $file (grep { length } split /\n/, $procs) {
  open(my $fh, '>', $file) or fail("cannot join the instance's control group: $!");
  print $fh "$$\n";
  close($fh) or fail("cannot join the instance's control group: $!");
}
if ($join) {
  syscall($n{setgroups}, 0, 0) == 0 or fail("setgroups: $!");
  for my $fd (4 .. 10) {
    syscall($n{setns}, $fd, 0) == 0 or fail("cannot enter the instance's namespaces: $!");
    syscall($n{close}, $fd);
  }
}
my $pid = fork;
defined $pid or fail("fork: $!");
if ($pid) {
  $SIG{$_} = sub { kill 'KILL', $pid } for qw(TERM HUP INT);
  waitpid($pid, 0);
  exit status($?);
}
if ($join) {
  syscall($n{prctl}, 47, 4, 0, 0, 0);
  syscall($n{prctl}, 24, $_, 0, 0, 0) for 0 .. 63;
  syscall($n{prctl}, 38, 1, 0, 0, 0) == 0 or fail("no_new_privs: $!");
  syscall($n{setresgid}, $gid + 0, $gid + 0, $gid + 0) == 0 or fail("setresgid: $!");
  syscall($n{setresuid}, $uid + 0, $uid + 0, $uid + 0) == 0 or fail("setresuid: $!");
  my ($header, $data) = (pack('LL', 0x20080522, 0), pack('L6', 0, 0, 0, 0, 0, 0));
  syscall($n{capset}, $header, $data) == 0 or fail("capset: $!");
}
chdir($cwd) or chdir('/');
if ($tty eq '') {
  exec { $cmd[0] } @cmd;
  fail("cannot run $cmd[0]: $!");
}
my ($rows, $cols) = split /x/, $tty;
open(my $m, '+<', '/dev/ptmx') or fail("no terminal in the sandbox: $!");
my $number = pack('L', 0);
ioctl($m, 0x80045430, $number) or fail("no terminal in the sandbox: $!");
sub winsize { my $size = pack('S4', @_, 0, 0); ioctl($m, 0x5414, $size) }
my $unlock = pack('l', 0);
ioctl($m, 0x40045431, $unlock) or fail("no terminal in the sandbox: $!");
winsize($rows, $cols);
my $pts = '/dev/pts/' . unpack('L', $number);
my $child = fork;
defined $child or fail("fork: $!");
if (!$child) {
  syscall($n{setsid}) >= 0 or fail("setsid: $!");
  open(my $s, '+<', $pts) or fail("cannot open the terminal: $!");
  ioctl($s, 0x540E, 0);
  open(STDIN, '<&', $s); open(STDOUT, '>&', $s); open(STDERR, '>&', $s);
  close($m); close($s);
  exec { $cmd[0] } @cmd;
  fail("cannot run $cmd[0]: $!");
}
open(my $ctl, '<&=', 3) or fail("no control pipe: $!");
my ($input, $control, $pending) = (1, 1, '');
sub put { my ($fh, $bytes) = @_; while (length $bytes) { my $w = syswrite($fh, $bytes); return unless defined $w; substr($bytes, 0, $w) = '' } }
while (1) {
  my $rin = '';
  vec($rin, fileno($m), 1) = 1;
  vec($rin, 0, 1) = 1 if $input;
  vec($rin, 3, 1) = 1 if $control;
  next if select(my $rout = $rin, undef, undef, undef) < 0;
  if (vec($rout, fileno($m), 1)) {
    my $r = sysread($m, my $bytes, 65536);
    last unless $r;
    put(\*STDOUT, $bytes);
  }
  if ($input && vec($rout, 0, 1)) {
    my $r = sysread(STDIN, my $bytes, 65536);
    if ($r) { put($m, $bytes) } else { $input = 0 }
  }
  if ($control && vec($rout, 3, 1)) {
    my $r = sysread($ctl, my $bytes, 4096);
    if (!$r) { $control = 0; next }
    $pending .= $bytes;
    while ($pending =~ s/^(\d{1,5}) (\d{1,5})\n//) { winsize($1, $2) }
    $pending = '' if length($pending) > 64;
  }
}
waitpid($child, 0);
exit status($?);
`;

/** setns, setgroups, setresgid, setresuid, prctl, capset, close, setsid: their numbers per architecture. */
const SYSCALLS: Partial<Record<NodeJS.Architecture, number[]>> = {
  x64: [308, 116, 119, 117, 157, 126, 3, 112],
  arm64: [268, 159, 149, 147, 167, 91, 57, 157],
};

/** The helper's first argument on this machine, or null where its system calls are not known. */
export function helperSyscalls(arch: NodeJS.Architecture = process.arch): string | null {
  return SYSCALLS[arch]?.join(',') ?? null;
}

/** The namespaces joined, in order, from fd 4: the user namespace first (it grants the rest), the mount namespace last. */
export const JOINED_NAMESPACES = ['user', 'ipc', 'uts', 'net', 'cgroup', 'pid', 'mnt'] as const;
