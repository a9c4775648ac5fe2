using System;
using System.Collections.Generic;
using Json = System.Text.Json.JsonSerializer;

namespace Billing.Invoices
{
    /// <summary>Something that can be totalled.</summary>
    public interface ITotal
    {
        decimal Total();
    }

    public enum Status { Draft, Sent, Paid }

    /// <summary>
    /// An invoice with lines and a customer.
    /// </summary>
    public class Invoice : Document, ITotal, IDisposable
    {
        public const int MaxLines = 200;
        private readonly List<Line> _lines = new List<Line>();
        private static int _created, _voided;

        public string Customer { get; set; }
        public Status State { get; private set; } = Status.Draft;

        public Invoice(string customer) : base("invoice")
        {
            Customer = customer ?? throw new ArgumentNullException(nameof(customer));
            _created++;
        }

        /// <summary>Adds a line.</summary>
        public void Add(Line line)
        {
            if (_lines.Count >= MaxLines) throw new InvalidOperationException("full");
            _lines.Add(line);
        }

        public decimal Total()
        {
            decimal sum = 0;
            foreach (var l in _lines) sum += l.Amount();
            return sum;
        }

        [Obsolete("Use ToJson")]
        public override string ToString() => Json.Serialize(this);

        protected virtual async Task SendAsync(IMailer mailer)
        {
            await mailer.SendAsync(Customer, ToString());
            State = Status.Sent;
        }

        public void Dispose() { }
    }

    internal struct Line
    {
        public decimal Price;
        public int Quantity;
        public decimal Amount() => Price * Quantity;
    }
}
