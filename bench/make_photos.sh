#!/usr/bin/env bash
# The benchmark's photo folder: fetches (does not install) the Debian packages that ship real
# photographs, unpacks them in a cache and cuts N ImageNet-like JPEGs from them (make_photos.py).
#   usage: bench/make_photos.sh OUT [N=2000]
set -euo pipefail
out=${1:?usage: bench/make_photos.sh OUT [N]}
n=${2:-2000}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ember-photo-sources
mkdir -p "$cache"
if [[ ! -d $cache/x ]]; then
  (cd "$cache" && apt-get download python3-skimage python3-sklearn >/dev/null 2>&1 &&
     for d in *.deb; do dpkg-deb -x "$d" x; done)
fi
mapfile -t src < <(find "$cache/x" \( -path '*skimage/data/*' -o -path '*sklearn/datasets/images/*' \) \
                      \( -name '*.jpg' -o -name '*.png' \) | sort)
/usr/bin/python3 "$(dirname "$0")/make_photos.py" "$out" "$n" "${src[@]}"
