#!/usr/bin/env bats
# 00_diagrams.bats: every diagrams/NAME.dot has a committed diagrams/NAME.svg, and dot renders the .dot to exactly that SVG.
# Every figure comes in both languages: NAME.dot (English) and NAME.zh-CN.dot (Chinese), which sets the
# CJK font below on its graph, nodes and edges.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

# The Chinese figures' font, from Debian's fonts-wqy-microhei ('make deps' installs it).  graphviz measures
# each label in it, so the same .dot gives the same SVG on every machine that has it, whatever other fonts
# (fonts-noto-cjk, say) are installed; without it the labels are measured in another font.
ZH_FONT="WenQuanYi Micro Hei"
ZH_FONT_PACKAGE="fonts-wqy-microhei"

setup() {
	load lib/test_helper
	DIR=$PROJECT_ROOT/diagrams
}

# True if fontconfig knows the Chinese figures' font.
zh_font_installed() {
	fc-list : family 2>/dev/null | tr ',' '\n' | grep -qxF "$ZH_FONT"
}

@test "every SVG in diagrams/ is what dot renders from its .dot source today" {
	command -v dot >/dev/null || fail "dot is not installed: run make deps (it installs graphviz)"
	local file name problems=() zh_font=yes
	compgen -G "$DIR/*.dot" >/dev/null || fail "diagrams/ holds no .dot source"
	zh_font_installed || {
		zh_font=no
		problems+=("fc-list lists no font \"$ZH_FONT\", which the Chinese figures (diagrams/*.zh-CN.dot) are drawn in: without it graphviz measures their labels in another font and every Chinese SVG would look stale; install it (Debian's $ZH_FONT_PACKAGE) with make deps. The Chinese SVGs were not compared.")
	}
	for file in "$DIR"/*.dot; do
		name=$(basename "$file" .dot)
		if [ ! -f "$DIR/$name.svg" ]; then
			problems+=("diagrams/$name.dot has no diagrams/$name.svg: run make diagrams")
			continue
		fi
		[[ $name == *.zh-CN && $zh_font == no ]] && continue
		run dot -Tsvg -o "$BATS_TEST_TMPDIR/$name.svg" "$file"
		assert_success
		cmp -s "$BATS_TEST_TMPDIR/$name.svg" "$DIR/$name.svg" ||
			problems+=("diagrams/$name.svg is stale: it is not what dot renders from diagrams/$name.dot; run make diagrams")
	done
	for file in "$DIR"/*.svg; do
		[ -e "$file" ] || continue
		name=$(basename "$file" .svg)
		[ -f "$DIR/$name.dot" ] ||
			problems+=("diagrams/$name.svg has no diagrams/$name.dot: restore its source or delete the SVG")
	done
	[ ${#problems[@]} -eq 0 ] || fail "$(printf '%s\n' "${problems[@]}")"
}

@test "every figure comes in both languages: each diagrams/NAME.dot has its Chinese twin NAME.zh-CN.dot, and each twin its English" {
	local file name problems=()
	for file in "$DIR"/*.dot; do
		name=$(basename "$file" .dot)
		if [[ $name == *.zh-CN ]]; then
			[ -f "$DIR/${name%.zh-CN}.dot" ] ||
				problems+=("diagrams/$name.dot has no English diagrams/${name%.zh-CN}.dot")
		else
			[ -f "$DIR/$name.zh-CN.dot" ] ||
				problems+=("diagrams/$name.dot has no Chinese twin diagrams/$name.zh-CN.dot: translate its labels into one (see diagrams/README.md), then run make diagrams")
		fi
	done
	[ ${#problems[@]} -eq 0 ] || fail "$(printf '%s\n' "${problems[@]}")"
}

@test "the Chinese figures are drawn in $ZH_FONT alone, and the font has every character they use" {
	zh_font_installed || fail "fc-list lists no font \"$ZH_FONT\": install it (Debian's $ZH_FONT_PACKAGE) with make deps"
	local file name problems=() fonts font_file charset missing
	for file in "$DIR"/*.zh-CN.dot; do
		name=diagrams/$(basename "$file")
		# Every fontname is the CJK font first (the rest of the list is for a reader's browser), and the
		# graph, node and edge defaults all set it.
		fonts=$(grep -oE 'fontname="[^"]*"' "$file" | sort -u)
		if [ -z "$fonts" ] || grep -qvF "fontname=\"$ZH_FONT," <<<"$fonts"; then
			problems+=("$name: every fontname must start with \"$ZH_FONT,\"; it has: ${fonts//$'\n'/ }")
		fi
		for kind in graph node edge; do
			grep -qE "^[[:space:]]*$kind \[fontname=\"$ZH_FONT," "$file" ||
				problems+=("$name: its $kind defaults do not set fontname=\"$ZH_FONT,...\"")
		done
	done
	# A character the font lacks would be drawn in whatever font the machine has: the SVG would depend on it.
	font_file=$(fc-match -f '%{file}' "$ZH_FONT")
	charset=$(fc-query -f '%{charset}\n' "$font_file" | head -n 1)
	missing=$(python3 - "$charset" "$DIR"/*.zh-CN.dot <<'PY'
import html, re, sys
ranges = [tuple(int(x, 16) for x in (r.split('-') * 2)[:2]) for r in sys.argv[1].split()]
for path in sys.argv[2:]:
    text = '\n'.join(l for l in open(path, encoding='utf-8') if not l.lstrip().startswith('//'))
    text = html.unescape(re.sub(r'&#(\d+);', lambda m: chr(int(m.group(1))), text))
    lacking = sorted({c for c in text if ord(c) > 0x7e and not any(a <= ord(c) <= b for a, b in ranges)})
    if lacking:
        print(f"diagrams/{path.rsplit('/', 1)[-1]}: the font lacks " + ' '.join(f'{c} (U+{ord(c):04X})' for c in lacking))
PY
	)
	[ -z "$missing" ] || problems+=("$missing")
	[ ${#problems[@]} -eq 0 ] || fail "$(printf '%s\n' "${problems[@]}")"
}
