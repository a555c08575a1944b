PATCHES = $(addprefix patches/,$(shell sed -e "s/\#.*//" patches/series 2>/dev/null))
