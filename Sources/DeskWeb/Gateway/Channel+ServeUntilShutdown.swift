import DeskFrontProtocol
import NIOCore
import ServiceLifecycle

extension Channel {
    /// Waits for this listener to close, closing it when the task is cancelled or a graceful
    /// shutdown begins (swift-service-lifecycle).
    func serveUntilShutdown() async {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                try? await closeFuture.get()
            } onGracefulShutdown: {
                self.close(promise: nil)
            }
        } onCancel: {
            self.close(promise: nil)
        }
    }
}
