#!/usr/bin/env bash
# figures-agree.sh: check that every figure a summary (INTERVIEW.md) states, in English or Chinese, is one the book (its English chapters) states too.
#
# Usage: tests/tools/figures-agree.sh SUMMARY.md CHAPTER.md...
# A figure is one of:
#   a number with its unit          0.64 ms, 4.3 s, 800 Gb/s, 1.8 TB/s, 24-bit, 72 GPUs
#   a hexadecimal value             0x8915
#   a power or a formula            4.096 µs·2^timeout, 2^20, 2(N-1)/N
#   a port or a status number       UDP 4791, status 12
# Both texts are normalised the same way before comparing: Chinese units become
# the English ones (毫秒 ms, 微秒 µs, 秒 s, 位 -bit, 字节 bytes), "us" becomes µs,
# "N bits" becomes "N-bit", × and * become ·, − becomes -, Markdown's backticks
# and bold marks go, and spaces inside a formula go. A figure matches only whole:
# 4.3 s does not match 14.3 s. Prints every figure the book lacks, with
# its line, and exits 1 if there is any.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 SUMMARY.md CHAPTER.md..." >&2; exit 2; }

exec perl -CSDA -Mutf8 -e '
use strict; use warnings;

my $units = qr{(?:TB/s|GB/s|Gb/s|MB/s|GT/s|µs|ns|ms|s|KiB|MiB|GiB|KB|MB|GB|TB|bytes|byte|-bit|-byte|GPUs|W|%)};
my $num = qr{\d+(?:,\d{3})*(?:\.\d+)?};

sub normalise {
	my ($t) = @_;
	$t =~ s/[`]|\*\*//g;
	$t =~ s/\x{2212}/-/g;
	$t =~ s/\s*[×*·]\s*/·/g;
	$t =~ s/(\d)\s*毫秒/$1 ms/g;
	$t =~ s/(\d)\s*微秒/$1 µs/g;
	$t =~ s/(\d)\s*秒/$1 s/g;
	$t =~ s/(\d)\s*位/$1-bit/g;
	$t =~ s/(\d)\s*字节/$1 bytes/g;
	$t =~ s/(\d)\s*us\b/$1 µs/g;
	$t =~ s/(\d)[ -]bits?\b/$1-bit/g;
	$t =~ s/(\d)\s*\^\s*/$1^/g;
	$t =~ s/\(\s*([A-Za-z])\s*([-+])\s*(\d+)\s*\)\s*\/\s*([A-Za-z])/($1$2$3)\/$4/g;
	$t =~ s/[ \t]+/ /g;
	return $t;
}

sub figures {
	my ($line) = @_;
	my @f;
	while ($line =~ /((?:$num ?µs·)?\d+\^[A-Za-z0-9_]+)/g) { push @f, $1; }
	while ($line =~ /(\d*\([A-Za-z][-+]\d+\)\/[A-Za-z])/g) { push @f, $1; }
	while ($line =~ /(?<![\w.])(0x[0-9A-Fa-f]+)\b/g) { push @f, $1; }
	while ($line =~ /(?<![\w.^·])($num ?$units)(?![A-Za-z\/])/g) { push @f, $1; }
	while ($line =~ /\b((?:UDP|port|status) \d+)\b/g) { push @f, $1; }
	return @f;
}

sub slurp { my ($f) = @_; open(my $fh, "<", $f) or die "figures-agree: cannot read $f: $!\n"; local $/; my $t = <$fh>; return $t; }

my ($summary, @chapters) = @ARGV;
my $tutorial = @chapters == 1 ? $chapters[0] : "the book";
my $tut = normalise(join("\n", map { slurp($_) } @chapters));
$tut =~ s/\s+/ /g;
my ($n, $missing, %done) = (0, 0);
open(my $fh, "<", $summary) or die "figures-agree: cannot read $summary: $!\n";
while (my $line = <$fh>) {
	chomp $line;
	for my $fig (figures(normalise($line))) {
		$n++;
		next if $done{$fig}++;
		my $before = $fig =~ /^[\d(]/ ? qr/(?<![\d.])/ : qr/\b/;
		my $after = $fig =~ /[\dA-Za-z]$/ ? qr/(?![\dA-Za-z])/ : qr//;
		next if $tut =~ /$before\Q$fig\E$after/;
		print "figures-agree: $summary:$.: states \"$fig\", which $tutorial does not state\n";
		$missing++;
	}
}
close $fh;
die "figures-agree: no figures found in $summary: the pattern is broken\n" unless $n;
print "figures-agree: $missing figures of $summary are not in $tutorial\n" if $missing;
exit($missing ? 1 : 0);
' -- "$@"
