import Foundation
import Combine

/// Something that can be played.
protocol Playable: AnyObject {
    var title: String { get }
    func play() async throws
}

enum PlaybackState: String {
    case idle, playing
    case paused
}

/// A track in a playlist.
struct Track: Codable, Hashable {
    let id: UUID
    var title: String
    var duration: TimeInterval = 0
}

/// Plays tracks in order.
public final class Player: BasePlayer, Playable {
    public static let shared = Player(queue: [])
    private(set) var queue: [Track]
    var state: PlaybackState = .idle
    let maxQueue = 100

    init(queue: [Track]) {
        self.queue = queue
        super.init()
    }

    var title: String { queue.first?.title ?? "" }

    /// Start playing the first track.
    public func play() async throws {
        guard let track = queue.first else { return }
        state = .playing
        try await engine.start(track.id)
        NotificationCenter.default.post(name: .didPlay, object: track)
    }

    @available(*, deprecated, message: "use enqueue")
    func add(_ track: Track) -> Bool {
        enqueue(track)
    }

    override func stop() {
        state = .idle
        super.stop()
    }

    deinit {
        stop()
    }
}

extension Player {
    func enqueue(_ track: Track) -> Bool {
        guard queue.count < maxQueue else { return false }
        queue.append(track)
        return true
    }
}

typealias TrackList = [Track]

func shuffle<T>(_ items: [T]) -> [T] {
    return items.shuffled()
}
