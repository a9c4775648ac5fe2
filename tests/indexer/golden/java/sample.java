package com.example.library;

import java.util.ArrayList;
import java.util.List;
import java.util.function.*;
import static java.util.Objects.requireNonNull;

/**
 * A lending library that tracks books and loans.
 */
public class Library extends AbstractCatalog<Book> implements Searchable, AutoCloseable {
    public static final int MAX_LOANS = 5;
    private final List<Book> books = new ArrayList<>();
    protected String name, city;

    /** Creates a library with the given name. */
    public Library(String name) {
        super(name.length());
        this.name = requireNonNull(name);
    }

    /**
     * Adds a book to the catalogue.
     * @param book the book to add
     */
    public void add(Book book) {
        books.add(book);
        log("added " + book.title());
    }

    @Override
    public List<Book> search(String query) throws SearchException {
        List<Book> out = new ArrayList<>();
        for (Book b : books) {
            if (b.title().contains(query)) {
                out.add(b);
            }
        }
        return out;
    }

    @Deprecated
    static void log(String message) {
        System.out.println(message);
    }

    @Override
    public void close() {
        books.clear();
    }

    /** Loan states. */
    enum Status {
        AVAILABLE,
        ON_LOAN;

        boolean lendable() {
            return this == AVAILABLE;
        }
    }

    interface Listener {
        void onLoan(Book book, Status status);
    }

    record Loan(Book book, String member) {}
}
