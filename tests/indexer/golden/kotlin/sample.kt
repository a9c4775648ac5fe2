package com.example.notes

import java.time.Instant
import kotlinx.coroutines.flow.*
import com.example.db.NoteDao as Dao

/** Something with an identity. */
interface Identified {
    val id: Long
}

enum class Priority { LOW, NORMAL, HIGH }

/**
 * A note written by a user.
 */
data class Note(
    override val id: Long,
    val title: String,
    var body: String = "",
    private val created: Instant = Instant.now(),
) : Identified

const val MAX_NOTES = 500

/** Stores notes and notifies listeners. */
open class NoteRepository(private val dao: Dao) : BaseRepository<Note>(dao), AutoCloseable {
    private val listeners = mutableListOf<(Note) -> Unit>()

    companion object {
        const val TABLE = "notes"
        fun create(dao: Dao): NoteRepository = NoteRepository(dao)
    }

    /** Save a note, refusing past [MAX_NOTES]. */
    suspend fun save(note: Note): Boolean {
        if (dao.count() >= MAX_NOTES) return false
        dao.insert(note)
        listeners.forEach { it(note) }
        return true
    }

    fun observe(listener: (Note) -> Unit) {
        listeners.add(listener)
    }

    @Deprecated("use observe")
    open fun subscribe(listener: (Note) -> Unit) = observe(listener)

    override fun close() {
        listeners.clear()
    }
}

object NoteFormatter {
    fun format(note: Note): String = "${note.title}: ${note.body.take(40)}"
}

typealias NoteList = List<Note>

fun byPriority(notes: NoteList, p: Priority): NoteList =
    notes.filter { it.title.startsWith(p.name) }
