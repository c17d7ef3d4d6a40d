#!/usr/bin/env bash
# check-links.sh: check that every internal link in the given Markdown files resolves: #anchors to headings (GitHub's slug rules, CJK included) and links to local files.
#
# Usage: tests/tools/check-links.sh FILE.md...
#        tests/tools/check-links.sh --slugs FILE.md   (print each heading: its level, anchor and text)
# A link is internal when its target is not a URL (http:, https:, mailto:):
#   [text](#anchor)            a heading of the same file
#   [text](other.md#anchor)    a heading of other.md, relative to the linking file
#   [text](path)               a file or folder that exists
# Anchors follow GitHub's rules (github-slugger): the heading's text, lower-cased,
# every character that is not a letter, mark, digit, connector (such as _),
# hyphen or space removed, each space turned into a hyphen; a repeated slug gets
# -1, -2 and so on. Chinese characters are letters, so "## 第一步：打开设备" is
# #第一步打开设备. Explicit <a id="..."> or <a name="..."> anchors count too.
# Links inside fenced code blocks and inline code are not links. Prints one line
# per broken link and exits 1 if there is any.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 FILE.md..." >&2; exit 2; }

exec perl -CSDA -Mutf8 -e '
use strict; use warnings;
use File::Basename qw(dirname);
use File::Spec;

my %anchors;    # canonical path => { slug => 1 }

sub slug {
	my ($text) = @_;
	$text =~ s/!?\[([^\]]*)\]\([^)]*\)/$1/g;    # links and images: their text
	$text =~ s/<[^>]+>//g;                       # inline HTML tags
	$text = lc $text;
	$text =~ s/[^\p{L}\p{M}\p{N}\p{Pc}\- ]//g;
	$text =~ s/ /-/g;
	return $text;
}

# The lines of FILE outside fenced code blocks, as [number, text].
sub prose_lines {
	my ($file) = @_;
	open(my $fh, "<", $file) or die "check-links: cannot read $file: $!\n";
	my ($fence, @out) = ("");
	while (my $line = <$fh>) {
		chomp $line;
		if ($fence eq "" && $line =~ /^\s*(```+|~~~+)/) { $fence = substr($1, 0, 3); next; }
		if ($fence ne "") { $fence = "" if $line =~ /^\s*\Q$fence\E/; next; }
		push @out, [$., $line];
	}
	close $fh;
	return @out;
}

sub anchors_of {
	my ($file) = @_;
	my $key = File::Spec->rel2abs($file);
	return $anchors{$key} if $anchors{$key};
	my (%seen, %set);
	for my $l (prose_lines($file)) {
		my $line = $l->[1];
		while ($line =~ /<a\s+(?:id|name)="([^"]+)"/g) { $set{$1} = 1; }
		next unless $line =~ /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
		my $s = slug($1);
		my $n = $seen{$s}++;
		$set{$n ? "$s-$n" : $s} = 1;
	}
	return $anchors{$key} = \%set;
}

sub unescape { my ($s) = @_; $s =~ s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge; utf8::decode($s); return $s; }

if ($ARGV[0] eq "--slugs") {
	my $file = $ARGV[1];
	my %seen;
	for my $l (prose_lines($file)) {
		next unless $l->[1] =~ /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
		my ($level, $text) = (length $1, $2);
		my $s = slug($text);
		my $n = $seen{$s}++;
		print "$level\t", ($n ? "$s-$n" : $s), "\t$text\n";
	}
	exit 0;
}

my $broken = 0;
for my $file (@ARGV) {
	-f $file or die "check-links: no file $file\n";
	my $dir = dirname($file);
	for my $l (prose_lines($file)) {
		my ($n, $line) = @$l;
		$line =~ s/`[^`]*`//g;    # inline code is not a link
		while ($line =~ /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g) {
			my $target = $1;
			next if $target =~ m{^[a-z][a-z0-9+.-]*:}i;    # a URL
			my ($path, $anchor) = $target =~ /^([^#]*)(?:#(.*))?$/;
			my $dest = $path eq "" ? $file : File::Spec->catfile($dir, unescape($path));
			if (!-e $dest) {
				print "check-links: $file:$n: link to \"$target\": no file $dest\n"; $broken++; next;
			}
			next unless defined $anchor && $anchor ne "";
			if (-d $dest || $dest !~ /\.md$/i) {
				print "check-links: $file:$n: link to \"$target\": an anchor in $dest, which is not a Markdown file\n"; $broken++; next;
			}
			my $want = lc unescape($anchor);
			next if anchors_of($dest)->{$want};
			print "check-links: $file:$n: link to \"$target\": $dest has no heading whose anchor is #$want\n";
			$broken++;
		}
	}
}
print "check-links: $broken broken links\n" if $broken;
exit($broken ? 1 : 0);
' -- "$@"
