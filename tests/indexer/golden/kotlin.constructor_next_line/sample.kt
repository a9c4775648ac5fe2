package com.example.spec

/** A file to write, with the primary constructor on the line after the name. */
public class FileSpec
private constructor(builder: Builder, private val tagMap: TagMap = builder.buildTagMap()) :
  Taggable by tagMap, Annotatable {
  override val annotations: List<AnnotationSpec> = builder.annotations
  public fun toBuilder(): Builder = Builder(this)

  public class Builder<T : Any>
  internal constructor(
    public val packageName: String,
  ) : Taggable.Builder<Builder<T>> {
    public fun build(): FileSpec = FileSpec(this)
  }

  public companion object {
    @JvmStatic
    public fun get(packageName: String): FileSpec = Builder<Any>(packageName).build()
  }
}

class Injected
@Inject constructor(val client: Client) {
  fun fetch() = client.call()
}

// class Comment
// private constructor(a: Int): a comment stays a comment
