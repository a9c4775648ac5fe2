# frozen_string_literal: true

require "json"
require_relative "support/base_store"

module Library
  VERSION = "1.4.0"

  # Raised when a book cannot be found.
  class NotFound < StandardError; end

  # A catalogue of books backed by a store.
  class Catalogue < BaseStore
    include Enumerable
    extend Forwardable

    DEFAULT_LIMIT = 20
    attr_reader :books, :name

    def initialize(name, store: nil)
      @name = name
      @books = {}
      @store = store || MemoryStore.new
    end

    # Build a catalogue from a JSON file.
    def self.load(path)
      data = JSON.parse(File.read(path))
      new(data["name"]).tap { |c| c.import(data["books"]) }
    end

    def each(&block)
      @books.each_value(&block)
    end

    # Find a book by ISBN or raise NotFound.
    def find!(isbn)
      @books.fetch(isbn) { raise NotFound, isbn }
    end

    def import(rows)
      rows.each do |row|
        add(Book.new(**row))
      end
      log("imported #{rows.size}")
    end

    private

    def add(book)
      @books[book.isbn] = book
      @store.save(book)
    end

    def log(message)
      warn("[catalogue] #{message}")
    end
  end
end
