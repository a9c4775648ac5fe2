<?php

declare(strict_types=1);

namespace App\Billing;

use App\Contracts\PaymentGateway;
use App\Models\{Invoice, Customer};
use Psr\Log\LoggerInterface as Logger;

require_once __DIR__ . '/helpers.php';

/**
 * Charges customers through a payment gateway.
 */
final class ChargeService extends BaseService implements Chargeable
{
    use RetriesRequests;

    public const MAX_ATTEMPTS = 3;
    private static int $charged = 0;
    protected ?Logger $logger = null;

    public function __construct(private PaymentGateway $gateway, Logger $logger)
    {
        parent::__construct();
        $this->logger = $logger;
    }

    /**
     * Charge an invoice; returns the gateway's transaction id.
     */
    public function charge(Invoice $invoice): string
    {
        $amount = $invoice->total();
        $id = $this->retry(fn () => $this->gateway->charge($invoice->customer(), $amount));
        self::$charged++;
        $this->logger?->info(sprintf('charged %s', $id));
        return $id;
    }

    public static function charged(): int
    {
        return static::$charged;
    }

    abstract protected function audit(Customer $customer): void;
}

interface Chargeable
{
    public function charge(Invoice $invoice): string;
}

enum Currency: string
{
    case Euro = 'EUR';
    case Dollar = 'USD';
}

function format_amount(int $cents, Currency $currency = Currency::Euro): string
{
    return number_format($cents / 100, 2) . ' ' . $currency->value;
}

define('BILLING_VERSION', '2.1');

if (!\defined('BILLING_DEBUG')) {
    \define('BILLING_DEBUG', false);
}
define($computed, 1);
