/// Where X servers listen: the socket directory, and the same path in the abstract namespace.
enum XSocketNames {
    static let prefixes = ["/tmp/.X11-unix/X", "@/tmp/.X11-unix/X"]
}
