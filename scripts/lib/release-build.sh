# Sourced by the scripts that build tsync themselves (installs, benchmarks, long campaigns).
# release_build PRODUCT: builds PRODUCT as tsync is installed and prints the binary's path:
# release, with Swift's runtime and Foundation linked in (`--static-swift-stdlib`, as the
# deployment images of Hummingbird and Vapor build). The binary then runs on a machine without the
# Swift toolchain, and starts sooner: it binds no symbols of Swift's shared libraries at run time
# (docs/PERFORMANCE.md, "A static runtime"). Every release build goes through here: builds with
# and without the flag share .build/release, and each would rebuild everything the other built.
release_build() {
    swift build -c release --static-swift-stdlib --product "$1" >&2
    echo "$(swift build -c release --static-swift-stdlib --show-bin-path)/$1"
}
# build_tsync CONFIGURATION: tsync built in debug or (as above) in release; prints its path.
build_tsync() {
    if [ "$1" = release ]; then
        release_build tsync
    else
        swift build --product tsync >&2
        echo "$(swift build --show-bin-path)/tsync"
    fi
}
