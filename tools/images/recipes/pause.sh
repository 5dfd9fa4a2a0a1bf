# shellcheck shell=bash disable=SC2034 # variables read by lib/image.sh
# pause: the sandbox image containerd starts first in every Pod (its
# `sandbox_image`). catatonit's pause mode (-P) runs no child and sleeps until
# a signal stops it, as the Kubernetes pause binary does. Debian's catatonit is
# statically linked, so the layer is that one binary and its licence.
tag=0.1
main_package=catatonit
packages=(catatonit)
variant=extract
layer_paths=(./usr/bin/catatonit ./usr/share/doc/catatonit/copyright)
# Kubernetes' own pause image runs as 65535 too; the sandbox needs no files.
run_as=65535:65535
entrypoint=(/usr/bin/catatonit -P)
