/// A verb's arguments as a type of their own: decoded from the wire `Request` once, where deskd
/// receives it, and written into one by a client. The compiler then says which fields belong to
/// which verb; the wire stays the one flat object docs/PROTOCOL.md describes.
public protocol ControlVerb: Sendable, Equatable {
    static var command: Command { get }
    /// The verb's arguments from a wire request, checked: a sentence for anything wrong.
    init(wire: Request) throws(DeskError)
    /// Writes the verb's arguments into a wire request of its command.
    func fill(_ wire: inout Request)
}

extension ControlVerb {
    /// The request as it travels.
    public var wire: Request {
        var request = Request(command: Self.command)
        fill(&request)
        return request
    }
}

extension Request {
    /// The display a verb that acts on one session names, checked, or the sentence saying how to name it.
    func requiredDisplay() throws(DeskError) -> Display {
        guard let display else {
            throw DeskError(.badRequest, "\(command.rawValue) needs a display, for example: deskctl \(command.rawValue) :3.")
        }
        return try display.checked()
    }
}
